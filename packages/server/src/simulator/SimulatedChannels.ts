/**
 * How a simulator finds the simulated channel a request is for (the simulators of WhatsApp, Messenger and Instagram,
 * Telegram and SMS): by the webhook key of the contact's page, or by what the adapter's call names (a phone number id,
 * a page id, a bot token, an account SID), with the channel's credentials decrypted as its adapter has them.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { ProviderCredentials } from "../channels/ProviderCredentials.js"
import { ChannelProviders } from "../channels/Providers.js"

export interface Simulated<C> {
  readonly key: string
  readonly kind: string
  readonly credentials: C
}

export const makeSimulatedChannels = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const providerCredentials = yield* ProviderCredentials
  const providers = yield* ChannelProviders

  /** The simulated channel of `kinds` with webhook key `key`, or the first whose credentials `matches`. */
  return <C>(
    kinds: ReadonlyArray<string>,
    by: { readonly key: string } | { readonly matches: (credentials: C, kind: string) => boolean }
  ) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ webhook_key: string; kind: string; credentials_ciphertext: string }>`
        select webhook_key, kind, credentials_ciphertext from channels
        where is_simulated and kind in ${sql.in(kinds)} and credentials_ciphertext is not null
          ${"key" in by ? sql`and webhook_key = ${by.key}` : sql``}`
      for (const row of rows) {
        const entry = Option.getOrThrow(providers.forKind(row.kind))
        // decrypted once per set of credentials, as a webhook or a send decrypts them
        const credentials: C = yield* providerCredentials.of(entry, row.credentials_ciphertext)
        if ("key" in by || by.matches(credentials, row.kind)) {
          return Option.some<Simulated<C>>({ key: row.webhook_key, kind: row.kind, credentials })
        }
      }
      return Option.none<Simulated<C>>()
    }).pipe(Effect.orDie)
})
