/**
 * Where and how a provider is called: its protocol, base URL, key and extra headers, decrypted from its row (never
 * logged). The seeded OpenAI and Anthropic rows fall back to the environment (OPENAI_API_KEY, OPENAI_BASE_URL,
 * ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), as before providers were rows. Kept by the row's revision, so a changed key
 * is read once and an unchanged one never twice.
 */
import type { AiProviderId } from "@parley/domain"
import { ModelUnavailable } from "@parley/worker"
import { Config, Effect, Option, Redacted, Schema } from "effect"
import { AppSecret } from "../config/AppSecret.js"
import { type ProviderSecretsRow, ProvidersRepo } from "./ProvidersRepo.js"

export interface ProviderEndpoint {
  readonly id: number
  readonly kind: string
  readonly slug: string
  /** without a trailing slash */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
  /** the row's `updated_at`: a client built for an older revision is not used */
  readonly revision: string
}

/** Where each protocol is served when the row names no URL. */
const DEFAULT_URLS: Readonly<Record<string, string>> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com",
  google: "https://generativelanguage.googleapis.com"
}

const trimSlash = (url: string) => url.replace(/\/+$/, "")

const optionalKey = (name: string) =>
  Config.redacted(name).pipe(
    Config.option,
    Config.map(Option.filter((key) => Redacted.value(key).trim() !== "")),
    Config.map(Option.getOrUndefined)
  )

const HeadersJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.String }))

export class ProviderEndpoints extends Effect.Service<ProviderEndpoints>()("@parley/server/ProviderEndpoints", {
  dependencies: [ProvidersRepo.Default, AppSecret.Default],
  effect: Effect.gen(function*() {
    const repo = yield* ProvidersRepo
    const secrets = yield* AppSecret
    const env = {
      openai: {
        key: yield* optionalKey("OPENAI_API_KEY"),
        url: yield* Config.string("OPENAI_BASE_URL").pipe(Config.withDefault(DEFAULT_URLS.openai!))
      },
      anthropic: {
        key: yield* optionalKey("ANTHROPIC_API_KEY"),
        // the client appends `/v1/messages`, as Anthropic's own SDKs do with ANTHROPIC_BASE_URL
        url: yield* Config.string("ANTHROPIC_BASE_URL").pipe(Config.withDefault(DEFAULT_URLS.anthropic!))
      }
    }
    const defaultTimeoutMs = yield* Config.integer("AI_REQUEST_TIMEOUT_MS").pipe(
      Config.withDefault(60_000),
      Config.validate({ message: "must be a positive number of milliseconds", validation: (ms) => ms > 0 })
    )

    /** The header names (their values stay sealed) for the API's `header_names`. */
    const headersOf = (ciphertext: string | null): Readonly<Record<string, string>> =>
      ciphertext === null ? {} : Schema.decodeUnknownSync(HeadersJson)(secrets.decrypt(ciphertext))

    const fromRow = (row: ProviderSecretsRow): ProviderEndpoint => {
      const fromEnv = row.slug === "openai" || row.slug === "anthropic" ? env[row.slug] : undefined
      const key = row.api_key_ciphertext === null
        ? fromEnv?.key
        : Redacted.make(secrets.decrypt(row.api_key_ciphertext))
      return {
        id: row.id,
        kind: row.kind,
        slug: row.slug,
        baseUrl: trimSlash(row.base_url ?? fromEnv?.url ?? DEFAULT_URLS[row.kind] ?? ""),
        apiKey: key,
        headers: headersOf(row.headers_ciphertext),
        timeoutMs: row.timeout_ms ?? defaultTimeoutMs,
        revision: row.updated_at
      }
    }

    const cache = new Map<number, ProviderEndpoint>()
    /**
     * The provider's endpoint as of `revision` (a ModelRef's `providerRevision`): read again when the row changed
     * since it was kept. Fails when the provider is gone.
     */
    const of = (id: number, revision?: string): Effect.Effect<ProviderEndpoint, ModelUnavailable> =>
      Effect.suspend(() => {
        const kept = cache.get(id)
        if (kept !== undefined && (revision === undefined || kept.revision === revision)) return Effect.succeed(kept)
        return repo.secrets(id as typeof AiProviderId.Type).pipe(
          Effect.orDie,
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new ModelUnavailable({ message: `The model's provider ${id} no longer exists` })),
            onSome: (row) => {
              const endpoint = fromRow(row)
              cache.set(id, endpoint)
              return Effect.succeed(endpoint)
            }
          }))
        )
      })

    /** Whether a seeded provider's environment key stands in for a missing row key. */
    const envKey = (slug: string) => (slug === "openai" || slug === "anthropic") && env[slug].key !== undefined

    return { of, fromRow, headersOf, envKey, defaultTimeoutMs }
  })
}) {}
