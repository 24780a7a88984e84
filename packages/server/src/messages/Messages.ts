import type { Multipart } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import type { WorkflowEngine } from "@effect/workflow"
import {
  classifyFile,
  type ConversationId,
  ConversationNotFound,
  CurrentActor,
  encodeMessagesCursor,
  FileEntryWithUrl,
  Forbidden,
  MAX_OPERATOR_FILE_BYTES,
  MAX_OPERATOR_FILES,
  MessageRecord,
  type MessagesFilter,
  MessagesPage,
  type MessageTemplate,
  PublicBaseUrl,
  storableName,
  ulid,
  Unprocessable
} from "@parley/domain"
import { Data, Effect, Option } from "effect"
import * as Fs from "node:fs"
import { ChannelProviders } from "../channels/Providers.js"
import { windowClosesAt } from "../channels/ServiceWindow.js"
import { ChannelTemplates } from "../channels/Templates.js"
import { Deliveries } from "../delivery/Deliveries.js"
import { ChannelDelivery } from "../engine/ChannelDelivery.js"
import { FileStorage } from "../files/FileStorage.js"
import { NEW_MESSAGE_EVENT, Realtime } from "../realtime/Realtime.js"
import { MessagesRepo, type Target } from "./MessagesRepo.js"

/** The channel refused the message (SPEC.md 3.4: `failed`, answered with a 500). */
export class ChannelRejected
  extends Data.TaggedError("ChannelRejected")<{ readonly message: string; readonly record: MessageRecord }>
{}

const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

/** Operator messages (SPEC.md 4.2): stored, then handed to the conversation's channel. */
export class Messages extends Effect.Service<Messages>()("@parley/server/Messages", {
  dependencies: [
    MessagesRepo.Default,
    FileStorage.Default,
    Deliveries.Default,
    Realtime.Default,
    ChannelDelivery.Default,
    ChannelProviders.Default,
    ChannelTemplates.Default
  ],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* MessagesRepo
    const storage = yield* FileStorage
    const deliveries = yield* Deliveries
    const realtime = yield* Realtime
    const delivery = yield* ChannelDelivery
    const channelProviders = yield* ChannelProviders
    const templates = yield* ChannelTemplates

    const record = (id: string, base: string) =>
      Effect.map(repo.record(id), (row) =>
        new MessageRecord({
          ...row,
          files: row.files.map((f) => new FileEntryWithUrl({ ...f, url: base + storage.signedPath(f.path) }))
        }))

    /**
     * Hand-off through the channel: the socket and the reply webhook for web and widget, the adapter's first attempt
     * for a provider channel (which records the outcome itself: `recorded`); what a channel cannot carry is a
     * rejection, recorded on the message.
     */
    const deliver = (
      t: Target,
      messageId: string,
      text: string | null,
      files: ReadonlyArray<FileEntryWithUrl>,
      senderName: string | null
    ): Effect.Effect<{ rejection: string | null; recorded: boolean }, never, WorkflowEngine.WorkflowEngine> =>
      Effect.gen(function*() {
        const rejected = (rejection: string) => ({ rejection, recorded: false })
        if (t.channel_id === null || t.kind === null) {
          return rejected("The conversation has no channel to send through.")
        }
        if (t.is_active !== true) return rejected("The conversation's channel is inactive.")
        // the files with their signed links, so the contact sees them live, not only in the history
        yield* realtime.publish(t.id, [{
          message: text ?? "",
          cost: 0,
          message_id: messageId,
          role: "assistant",
          is_manual: true,
          sender: "operator",
          sender_name: senderName,
          files
        }])
        const entry = channelProviders.forKind(t.kind)
        if (Option.isNone(entry)) return rejected(`Sending on ${t.kind} channels is not supported by this server.`)
        // the web chat hands off to its socket (above): its reply webhook follows durably, every attempt a workflow's
        if (entry.value.provider.rules.delivery.handOff === "socket") {
          yield* deliveries.start(messageId)
          return { rejection: null, recorded: false }
        }
        // a provider hands off when it takes the message: the first attempt now, its retries durably
        const target = yield* delivery.target(messageId)
        if (Option.isNone(target)) return rejected("The message is no longer stored.")
        const { attempts, outcome } = yield* delivery.attemptOn(target.value, 0, 1, false)
        if (!outcome.delivered && outcome.retryable) {
          yield* deliveries.startRetry(messageId, attempts, outcome.retryAfterMs)
        }
        return { rejection: null, recorded: true }
      })

    /**
     * A provider's service window for an operator's message (WhatsApp: 24 hours after the contact's latest message;
     * Messenger: 7 days with its HUMAN_AGENT tag): 422 once it closed.
     */
    const checkWindow = (t: Target) => {
      const provider = Option.map(channelProviders.forKind(t.kind ?? ""), (e) => e.provider)
      const operatorMs = Option.getOrUndefined(Option.flatMapNullable(provider, (p) => p.rules.operatorWindowMs))
      return Option.match(windowClosesAt(t, operatorMs), {
        onNone: () => Effect.void,
        onSome: (closedAt) => {
          if (closedAt >= Date.now()) return Effect.void
          const until = Option.exists(provider, (p) => p.templates !== undefined)
            ? "only an approved template can be sent"
            : "nothing can be sent"
          const hours = Math.max(t.service_window_ms ?? 0, operatorMs ?? 0) / 3_600_000
          return Unprocessable.of([{
            field: "message",
            message: closedAt === 0
              ? `The contact has not written on this ${t.kind} channel yet: ${until}.`
              : `The ${t.kind} service window closed at ${
                new Date(closedAt).toISOString()
              } (${hours} hours after the contact's latest message): ${until} until the contact writes again.`
          }])
        }
      })
    }

    /** A template instead of a message: alone, on a provider channel, resolved (422 naming what is wrong). */
    const templateOf = (
      t: Target,
      input: { readonly message: string | null; readonly template: MessageTemplate | null }
    ) =>
      input.message !== null && input.message !== ""
        ? Unprocessable.of([{ field: "message", message: "may not be given with template" }])
        : templates.resolve(String(t.id), input.template!)

    const send = Effect.fn("Messages.send")(function*(
      conversationId: ConversationId,
      input: {
        readonly message: string | null
        readonly files: ReadonlyArray<Multipart.PersistedFile>
        readonly template: MessageTemplate | null
      }
    ) {
      const actor = yield* CurrentActor
      const found = yield* repo.target(conversationId)
      if (Option.isNone(found)) return yield* new ConversationNotFound()
      const t = found.value
      if (!actor.workspaceIds.includes(t.workspace_id as never)) {
        return yield* new Forbidden({ message: "This action is unauthorized." })
      }
      const template = input.template === null ? null : yield* templateOf(t, input)
      if (template === null) yield* checkWindow(t)
      const text = template?.text ?? (input.message === null || input.message === "" ? null : input.message)
      if (text === null && input.files.length === 0) {
        return yield* Unprocessable.of([{ field: "message", message: "is required when files is not present" }])
      }
      if (input.files.length > MAX_OPERATOR_FILES) {
        return yield* Unprocessable.of([{
          field: "files",
          message: `may not have more than ${MAX_OPERATOR_FILES} items`
        }])
      }
      const month = new Date().toISOString().slice(0, 7).replace("-", "/")
      // every size is checked before any file is copied, so a refused request leaves nothing in storage
      const sizes = yield* Effect.forEach(
        input.files,
        (file) => Effect.promise(() => Fs.promises.stat(file.path)).pipe(Effect.map((s) => s.size))
      )
      if (sizes.some((size) => size > MAX_OPERATOR_FILE_BYTES)) {
        return yield* Unprocessable.of([{ field: "files", message: "may not contain a file greater than 25 MB" }])
      }
      const stored = yield* Effect.forEach(input.files, (file, i) =>
        Effect.gen(function*() {
          const size = sizes[i]!
          const key = `messages/${t.workspace_id}/${month}/${ulid()}/${safeName(file.name)}`
          yield* storage.putFromPath(key, file.path)
          const mimetype = storableName(file.contentType) || "application/octet-stream"
          const name = storableName(file.name)
          return { key, name, mimetype, size, entry: { path: key, mimetype, type: classifyFile(mimetype), size, name } }
        }))

      const id = ulid()
      yield* sql.withTransaction(Effect.gen(function*() {
        for (const f of stored) {
          yield* repo.insertFile({
            key: f.key,
            workspace_id: t.workspace_id,
            channel_id: t.channel_id,
            name: f.name,
            mimetype: f.mimetype,
            size: f.size
          })
        }
        yield* repo.insertMessage({
          id,
          target: t,
          text,
          files: stored.map((f) => f.entry),
          senderId: actor.userId,
          template: template?.send ?? null
        })
      })).pipe(Effect.orDie, Effect.onError(() => Effect.forEach(stored, (f) => storage.remove(f.key))))

      const base = yield* PublicBaseUrl
      const withUrls = stored.map((f) => new FileEntryWithUrl({ ...f.entry, url: base + storage.signedPath(f.key) }))
      const handed = yield* deliver(t, id, text, withUrls, Option.getOrNull(yield* repo.userName(actor.userId)))
      yield* realtime.toWorkspace(t.workspace_id, NEW_MESSAGE_EVENT, {
        conversation_id: t.id,
        message_id: id,
        role: "assistant",
        sender: "operator",
        sender_id: actor.userId,
        message: text
      })
      if (!handed.recorded) yield* repo.setStatus(id, handed.rejection)
      const result = yield* record(id, base)
      if (result.status === "failed") {
        return yield* new ChannelRejected({
          message: result.error ?? "The channel refused the message.",
          record: result
        })
      }
      return result
    })

    /**
     * Messages of the caller's workspaces, newest first (SPEC.md 4.5 `list_messages`), keyset-paged on
     * (created_at, id) so a page never repeats or skips a message written meanwhile.
     */
    const list = Effect.fn("Messages.list")(function*(filter: MessagesFilter) {
      const actor = yield* CurrentActor
      const rows = yield* repo.list(actor.workspaceIds, filter)
      const page = rows.slice(0, filter.limit)
      const last = page[page.length - 1]
      return new MessagesPage({
        messages: page,
        next_cursor: rows.length > filter.limit && last !== undefined
          ? encodeMessagesCursor({ createdAt: last.created_at, id: last.id })
          : null
      })
    })

    return { send, list }
  })
}) {}
