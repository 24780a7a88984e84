/**
 * A provider channel's credentials, decrypted and checked by its adapter's schema (never logged), kept by ciphertext
 * so a webhook, a send or a typing indicator decrypts nothing twice.
 */
import { Effect, Option, Schema } from "effect"
import { AppSecret } from "../config/AppSecret.js"
import type { ProviderEntry } from "./Providers.js"

const MAX_ENTRIES = 10_000

/** The columns of a channel's row that hold what its adapter sends with. */
export interface ChannelSecrets {
  readonly credentials_ciphertext: string | null
  readonly client_id: string | null
  readonly secret_ciphertext: string | null
  readonly callback_url: string | null
}

export class ProviderCredentials extends Effect.Service<ProviderCredentials>()("@parley/server/ProviderCredentials", {
  dependencies: [AppSecret.Default],
  effect: Effect.gen(function*() {
    const secrets = yield* AppSecret
    const decrypted = new Map<string, unknown>()
    const of = (entry: ProviderEntry, ciphertext: string): Effect.Effect<any> =>
      Effect.suspend(() => {
        const cached = decrypted.get(ciphertext)
        if (cached !== undefined) return Effect.succeed(cached)
        return Schema.decodeUnknown(Schema.parseJson(entry.provider.credentials))(secrets.decrypt(ciphertext)).pipe(
          Effect.tap((value) =>
            Effect.sync(() => {
              if (decrypted.size >= MAX_ENTRIES) decrypted.clear()
              decrypted.set(ciphertext, value)
            })
          ),
          Effect.orDie
        )
      })
    /**
     * The adapter's credentials from the channel's row: the decrypted `credentials` of a provider kind, or a web
     * channel's client id, secret and callback. None: nothing to send with (a web channel without `callback_url`
     * delivers over the socket only).
     */
    const load = (entry: ProviderEntry, row: ChannelSecrets): Effect.Effect<Option.Option<any>> =>
      entry.stored === "client"
        ? Effect.succeed(
          row.client_id === null || row.secret_ciphertext === null || row.callback_url === null
            ? Option.none()
            : Option.some({
              client_id: row.client_id,
              client_secret: secrets.decrypt(row.secret_ciphertext),
              callback_url: row.callback_url
            })
        )
        : row.credentials_ciphertext === null
        ? Effect.succeed(Option.none())
        : Effect.map(of(entry, row.credentials_ciphertext), Option.some)
    return { of, load }
  })
}) {}
