/**
 * The one inbound path of a contact's message, whatever the channel (docs/channels.md, "Inbound"): once a channel
 * has verified and read what the contact sent (the web receiver, a provider's webhook), the message is stored
 * (contact, conversation, current opportunity and message in one transaction), once per provider id or
 * Idempotency-Key, then operators are told and the message is handed to its conversation's entity. The caller
 * answers its sender after this returns, so a message is stored before any answer.
 */
import { SqlClient } from "@effect/sql"
import { type ConversationId, type FileEntry, ulid } from "@parley/domain"
import { Data, Effect, Option } from "effect"
import { isUniqueViolation } from "../db/SqlErrors.js"
import { FileStorage } from "../files/FileStorage.js"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { NEW_MESSAGE_EVENT, Realtime } from "../realtime/Realtime.js"
import { type ThreadChannel, type ThreadOrigin, WebChatThreads } from "../webchat/WebChatThreads.js"
import { HandOvers } from "./HandOvers.js"
import { InboundRepo } from "./InboundRepo.js"

/** A contact's message as its channel read it. */
export interface ContactMessage {
  /** The thread on the channel: the web chat's `contact_id`, a provider's chat id (`external_chat_id`). */
  readonly thread: string
  readonly text: string
  /** Its files, in storage already; `newFiles` are the ones this message brought, recorded with it. */
  readonly files: ReadonlyArray<FileEntry>
  readonly newFiles: ReadonlyArray<{ key: string; name: string; mimetype: string; size: number }>
  readonly attachments: ReadonlyArray<unknown>
  /** The provider's id (stored once per id: providers retry for days) and clock; null for the web chat. */
  readonly providerMessageId: string | null
  readonly sentAt: Date | null
  readonly callType: string
  /** Sent by a machine (ContactMessageEvent.automated): stored as handled (`automated`), never handed to the agent. */
  readonly automated?: string | undefined
}

export interface Arrival {
  /** SPEC.md 4.4's Idempotency-Key: a repeated key answers the first message's id. */
  readonly idempotencyKey?: string | undefined
  /**
   * A provider's word on the contact: its phone matches the contact; name and phone fill what a new thread's contact
   * lacks. `shared`: the message itself gives the phone (a contact's own card), which fills a known contact's too.
   */
  readonly contact?: ThreadOrigin & { readonly name?: string | undefined; readonly shared?: boolean }
}

/** The stored message's id; `duplicate`: stored before (the first id, when the channel's key can tell it). */
export interface Accepted {
  readonly messageId: string
  readonly duplicate: boolean
}

/** `handled_reason` of a contact message a machine sent: never answered, and never the one a reply answers. */
export const AUTOMATED = "automated"

class AlreadyStored extends Data.TaggedError("AlreadyStored") {}

interface Stored {
  readonly messageId: string
  /** null: stored before, under a provider id (nothing is handed over again) */
  readonly conversationId: ConversationId | null
  readonly duplicate: boolean
}

export class InboundMessages extends Effect.Service<InboundMessages>()("@parley/server/InboundMessages", {
  dependencies: [
    InboundRepo.Default,
    WebChatThreads.Default,
    OpportunitiesRepo.Default,
    FileStorage.Default,
    Realtime.Default,
    HandOvers.Default
  ],
  effect: Effect.gen(function*() {
    const repo = yield* InboundRepo
    const threads = yield* WebChatThreads
    const opportunities = yield* OpportunitiesRepo
    const storage = yield* FileStorage
    const realtime = yield* Realtime
    const handOvers = yield* HandOvers
    const sql = yield* SqlClient.SqlClient

    const columns = (channel: ThreadChannel, m: ContactMessage, id: string) => ({
      id,
      workspace_id: channel.workspace_id,
      channel_id: channel.id,
      pipeline_id: channel.pipeline_id,
      message: m.text,
      files: m.files,
      attachments: m.attachments,
      external_chat_id: m.thread,
      external_message_id: m.providerMessageId,
      provider_sent_at: m.sentAt,
      call_type: m.callType,
      ...(m.automated === undefined ? {} : { handled_reason: AUTOMATED })
    })

    /** Everything the message needs created or linked, in one transaction. */
    const inTransaction = (channel: ThreadChannel, m: ContactMessage, arrival: Arrival) =>
      sql.withTransaction(Effect.gen(function*() {
        const key = arrival.idempotencyKey
        if (key !== undefined) {
          const earlier = yield* repo.idempotentMessage(channel.id, key)
          if (Option.isSome(earlier)) return { ...earlier.value, duplicate: true }
        }
        const fast = yield* repo.threadByChat(channel.id, channel.pipeline_id, m.thread)
        const thread = Option.isSome(fast) && fast.value.complete
          ? {
            contactId: fast.value.contact_id,
            conversationId: fast.value.conversation_id,
            opportunityId: channel.pipeline_id === null ? null : fast.value.opportunity_id,
            stageId: channel.pipeline_id === null ? null : fast.value.stage_id
          }
          : yield* threads.resolve(channel, m.thread, arrival.contact)
        if (arrival.contact !== undefined && (Option.isNone(fast) || arrival.contact.shared === true)) {
          // a new thread, or a phone the contact shared: the provider's profile name and phone fill what it lacks
          yield* opportunities.fillContact(thread.contactId, channel.workspace_id, {
            name: arrival.contact.name ?? null,
            email: arrival.contact.email ?? null,
            phone: arrival.contact.phone ?? null
          })
        }
        for (const f of m.newFiles) {
          yield* repo.insertFile({ ...f, workspace_id: channel.workspace_id, channel_id: channel.id })
        }
        const id = ulid()
        const inserted = yield* repo.insertMessage({
          ...columns(channel, m, id),
          conversation_id: thread.conversationId,
          opportunity_id: thread.opportunityId,
          contact_id: thread.contactId,
          stage_id: thread.stageId
        })
        if (Option.isNone(inserted)) return yield* new AlreadyStored()
        if (key !== undefined) yield* repo.rememberIdempotency(channel.id, key, id)
        return { messageId: id, conversationId: thread.conversationId, duplicate: false }
      }))

    /**
     * Stores the message unless its provider id or Idempotency-Key was stored before, then tells operators and
     * hands it to its conversation's entity. A returning contact's plain message is one statement and no
     * transaction (stored on its thread as the statement finds it); a new thread, files or a key take the
     * transaction. A message stored before keeps nothing of this one (its new files are removed).
     */
    const accept = Effect.fn("InboundMessages.accept")(
      function*(channel: ThreadChannel, m: ContactMessage, arrival: Arrival = {}) {
        const plain = arrival.idempotencyKey === undefined && m.newFiles.length === 0 &&
          arrival.contact?.shared !== true
        const id = ulid()
        const known = plain ? yield* repo.insertOnKnownThread(columns(channel, m, id)) : Option.none()
        const stored: Stored = Option.isSome(known)
          ? { messageId: id, conversationId: known.value, duplicate: false }
          : m.providerMessageId !== null && (yield* repo.seen(channel.id, m.providerMessageId))
          ? { messageId: "", conversationId: null, duplicate: true }
          : yield* inTransaction(channel, m, arrival).pipe(
            // a concurrent retry with the same key lost the race on the key: answer what the winner stored
            Effect.catchIf(
              (e) => e._tag === "SqlError" && arrival.idempotencyKey !== undefined && isUniqueViolation(e),
              () => inTransaction(channel, m, arrival)
            ),
            Effect.catchTag(
              "AlreadyStored",
              () => Effect.succeed({ messageId: "", conversationId: null, duplicate: true })
            ),
            Effect.tapErrorCause(() => Effect.forEach(m.newFiles, (f) => storage.remove(f.key))),
            Effect.orDie
          )
        if (stored.duplicate || stored.conversationId === null) {
          yield* Effect.forEach(m.newFiles, (f) => storage.remove(f.key))
          // a key's first message is handed over again, should a crash have come between its storing and its hand-over
          if (stored.conversationId !== null) yield* handOvers.handOver(stored.conversationId, stored.messageId)
          return { messageId: stored.messageId, duplicate: true } satisfies Accepted
        }
        yield* realtime.toWorkspace(channel.workspace_id, NEW_MESSAGE_EVENT, {
          conversation_id: stored.conversationId,
          message_id: stored.messageId,
          role: "user",
          sender: "contact",
          sender_id: null,
          message: m.text
        })
        if (m.automated === undefined) yield* handOvers.handOver(stored.conversationId, stored.messageId)
        return { messageId: stored.messageId, duplicate: false } satisfies Accepted
      }
    )

    return { accept, seen: repo.seen }
  })
}) {}
