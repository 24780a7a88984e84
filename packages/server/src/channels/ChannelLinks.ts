/**
 * Links that start a contact's chat on a channel already tied to a contact Parley knows (docs/channels.md, "Links
 * to a known contact"): a sales rep sends `t.me/{bot}?start={token}`, the contact taps it, and the chat Telegram
 * opens joins that contact (and its opportunity) instead of making a new one. The token is signed with a key derived
 * from APP_SECRET and names the channel, the contact and an expiry; it fits Telegram's 64 characters of `[A-Za-z0-9_-]`.
 */
import { SqlClient } from "@effect/sql"
import {
  type ChannelId,
  ChannelLink,
  ChannelNotFound,
  type ContactId,
  CurrentActor,
  ProviderFailed,
  Unprocessable
} from "@parley/domain"
import { Effect, Option } from "effect"
import { createHmac } from "node:crypto"
import { AppSecret } from "../config/AppSecret.js"
import { equalSecrets } from "../identity/Secrets.js"
import { someOrFail } from "../util/Effects.js"
import { ChannelsRepo } from "./ChannelsRepo.js"
import { ProviderCredentials } from "./ProviderCredentials.js"
import { ChannelProviders } from "./Providers.js"

const HOUR = 3_600_000
/** How long a link works: long enough for a rep's message to be read, short enough that a leaked one ends. */
const VALID_HOURS = 30 * 24

export class ChannelLinks extends Effect.Service<ChannelLinks>()("@parley/server/ChannelLinks", {
  dependencies: [AppSecret.Default, ChannelsRepo.Default, ChannelProviders.Default, ProviderCredentials.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { linkKey } = yield* AppSecret
    const channels = yield* ChannelsRepo
    const providers = yield* ChannelProviders
    const providerCredentials = yield* ProviderCredentials

    const signature = (channelId: number, contactId: number, expiry: string) =>
      createHmac("sha256", linkKey).update(`${channelId}:${contactId}:${expiry}`).digest("base64url").slice(0, 27)

    /** `{contact id}_{expiry}_{signature}`: the ids and the expiry (hours since the epoch) in base 36. */
    const tokenFor = (channelId: number, contactId: number, expiresAtMs: number) => {
      const expiry = Math.ceil(expiresAtMs / HOUR).toString(36)
      return `${contactId.toString(36)}_${expiry}_${signature(channelId, contactId, expiry)}`
    }

    const contactIn = (workspaceId: number, contactId: number) =>
      sql<{ id: number }>`select id from contacts where id = ${contactId} and workspace_id = ${workspaceId}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /**
     * The contact a link's token names, when it was signed for this channel, has not expired, and the contact is
     * still the channel's workspace's.
     */
    const contactOf = (channel: { readonly id: ChannelId; readonly workspace_id: number }, token: string) =>
      Effect.gen(function*() {
        // the signature is base64url, which has `_` of its own: the first two separate the ids
        const parts = /^([0-9a-z]+)_([0-9a-z]+)_([A-Za-z0-9_-]+)$/.exec(token)
        if (parts === null) return Option.none<ContactId>()
        const [, id, expiry, sig] = parts as unknown as [string, string, string, string]
        const contactId = parseInt(id, 36)
        const expiresAt = parseInt(expiry, 36) * HOUR
        if (!Number.isSafeInteger(contactId) || !(expiresAt > Date.now())) return Option.none<ContactId>()
        if (!equalSecrets(sig, signature(channel.id, contactId, expiry))) return Option.none<ContactId>()
        return (yield* contactIn(channel.workspace_id, contactId))
          ? Option.some(contactId as ContactId)
          : Option.none<ContactId>()
      })

    /** `POST /api/user/channels/{channel}/links`: a link for a contact of the channel's workspace. */
    const create = Effect.fn("ChannelLinks.create")(function*(channelId: ChannelId, input: { contact_id: ContactId }) {
      const actor = yield* CurrentActor
      const channel = yield* channels.find(actor.workspaceIds, channelId).pipe(someOrFail(() => new ChannelNotFound()))
      const entry = providers.forKind(channel.kind)
      const stored = yield* channels.credentialsOf(channelId)
      const linkFor = Option.isSome(entry) ? entry.value.provider.linkFor : undefined
      if (Option.isNone(entry) || linkFor === undefined || Option.isNone(stored)) {
        return yield* Unprocessable.of([{
          field: "kind",
          message: `A ${channel.kind} channel has no links that start a chat: a Telegram channel has.`
        }])
      }
      if (!(yield* contactIn(channel.workspace_id, input.contact_id))) {
        return yield* Unprocessable.of([{
          field: "contact_id",
          message: "No contact of the channel's workspace has this id."
        }])
      }
      const credentials = yield* providerCredentials.of(entry.value, stored.value.credentials_ciphertext)
      const expiresAt = Math.ceil((Date.now() + VALID_HOURS * HOUR) / HOUR) * HOUR
      const token = tokenFor(channel.id, input.contact_id, expiresAt)
      const url = yield* linkFor(credentials, token).pipe(
        Effect.mapError((failure) =>
          new ProviderFailed({ message: `The provider could not say the channel's address: ${failure.message}` })
        )
      )
      return new ChannelLink({
        url,
        token,
        contact_id: input.contact_id,
        expires_at: new Date(expiresAt).toISOString()
      })
    })

    return { contactOf, create }
  })
}) {}
