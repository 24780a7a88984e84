/**
 * A provider channel's credentials, decrypted and checked by its adapter's schema (never logged), kept by ciphertext
 * so a webhook, a send or a typing indicator decrypts nothing twice.
 */
import { Effect, Schema } from "effect"
import { AppSecret } from "../config/AppSecret.js"
import type { ProviderEntry } from "./Providers.js"

const MAX_ENTRIES = 10_000

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
    return { of }
  })
}) {}
