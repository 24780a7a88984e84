/**
 * While the agent composes a reply on a provider channel, the contact sees it: their message marked read, with the
 * typing indicator where the provider has one (WhatsApp: blue ticks and "typing…" until the reply or 25 s). Beside
 * the turn: a failure is logged, never in the reply's way.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { HandOvers } from "./HandOvers.js"
import { ProviderCredentials } from "./ProviderCredentials.js"
import { ChannelProviders } from "./Providers.js"

const Target = Schema.Struct({
  external_message_id: Schema.String,
  external_chat_id: Schema.String,
  kind: Schema.String,
  credentials_ciphertext: Schema.String
})

export class ProviderTyping extends Effect.Service<ProviderTyping>()("@parley/server/ProviderTyping", {
  dependencies: [ChannelProviders.Default, ProviderCredentials.Default, HandOvers.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const providers = yield* ChannelProviders
    const credentials = yield* ProviderCredentials
    const handOvers = yield* HandOvers

    const target = SqlSchema.findOne({
      Request: Schema.String,
      Result: Target,
      execute: (messageId) =>
        sql`
          select m.external_message_id, m.external_chat_id, ch.kind, ch.credentials_ciphertext
          from messages m join channels ch on ch.id = m.channel_id
          where m.id = ${messageId} and m.role = 'user' and m.external_message_id is not null and m.external_chat_id is not null
            and ch.credentials_ciphertext is not null and ch.status = 'connected' and ch.is_active`
    })

    /** The contact's message `messageId` (the turn's latest) marked read, with typing. */
    const composing = (messageId: string) =>
      handOvers.beside(
        Effect.gen(function*() {
          const found = yield* target(messageId).pipe(Effect.orDie)
          if (Option.isNone(found)) return
          const entry = providers.forKind(found.value.kind)
          if (Option.isNone(entry)) return
          const decoded = yield* credentials.of(entry.value, found.value.credentials_ciphertext)
          yield* entry.value.provider.markRead(decoded, found.value.external_message_id, found.value.external_chat_id)
        }),
        "Showing the contact that the agent is typing failed"
      )

    return { composing }
  })
}) {}
