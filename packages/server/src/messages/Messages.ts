import { HttpServerRequest, type Multipart } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import {
  classifyFile,
  type ConversationId,
  ConversationNotFound,
  CurrentActor,
  encodeMessagesCursor,
  type FileEntry,
  FileEntryWithUrl,
  Forbidden,
  MAX_OPERATOR_FILE_BYTES,
  MAX_OPERATOR_FILES,
  MessageEntry,
  MessageRecord,
  type MessagesFilter,
  MessagesPage,
  storableName,
  ulid,
  Unprocessable,
  withNoReplyReason
} from "@parley/domain"
import type { WorkflowEngine } from "@effect/workflow"
import { Data, Effect, Option, Schema } from "effect"
import * as Fs from "node:fs"
import { AppConfig, publicBaseUrl } from "../config/AppConfig.js"
import { Deliveries } from "../delivery/Deliveries.js"
import { FileStorage } from "../files/FileStorage.js"
import { NEW_MESSAGE_EVENT, Realtime } from "../realtime/Realtime.js"

/** The channel refused the message (SPEC.md 3.4: `failed`, answered with a 500). */
export class ChannelRejected extends Data.TaggedError("ChannelRejected")<{ readonly message: string; readonly record: MessageRecord }> {}

interface Target {
  readonly id: ConversationId
  readonly workspace_id: number
  readonly contact_id: number
  readonly channel_id: number | null
  readonly external_chat_id: string | null
  readonly kind: string | null
  readonly is_active: boolean | null
  readonly callback_url: string | null
  readonly opportunity_id: number | null
  readonly stage_id: number | null
  readonly pipeline_id: number | null
}

const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

/** Operator messages (SPEC.md 4.2): stored, then handed to the conversation's channel. */
export class Messages extends Effect.Service<Messages>()("@parley/server/Messages", {
  dependencies: [FileStorage.Default, Deliveries.Default, AppConfig.Default, Realtime.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const storage = yield* FileStorage
    const deliveries = yield* Deliveries
    const realtime = yield* Realtime
    const config = yield* AppConfig

    const target = (id: ConversationId) =>
      sql<Target>`
        select c.id, c.workspace_id, c.contact_id, c.channel_id, c.external_chat_id, ch.kind, ch.is_active, ch.callback_url,
               o.id as opportunity_id, o.stage_id, o.pipeline_id
        from conversations c
        left join channels ch on ch.id = c.channel_id
        left join lateral (
          select o.id, o.stage_id, o.pipeline_id from conversation_opportunity co join opportunities o on o.id = co.opportunity_id
          where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
        ) o on true
        where c.id = ${id}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie)

    const record = (id: string, base: string) =>
      Effect.gen(function*() {
        const rows = yield* sql<Record<string, unknown>>`
          select id as "_id", role, status, message, files, cost_for_user::float8 as cost_for_user, external_chat_id, conversation_id,
                 opportunity_id, contact_id, channel_id, stage_id, pipeline_id, call_type, sender_id, error, external_message_id,
                 created_at, updated_at
          from messages where id = ${id}`
        const row = rows[0]!
        const files = (row.files as Array<FileEntry>).map((f) => new FileEntryWithUrl({ ...f, url: base + storage.signedPath(f.path) }))
        return yield* Schema.decodeUnknown(MessageRecord)({ ...row, files })
      }).pipe(Effect.orDie)

    /** Hand-off through the channel; what a channel kind cannot carry is a rejection, recorded on the message. */
    const deliver = (
      t: Target,
      messageId: string,
      text: string | null,
      files: ReadonlyArray<FileEntryWithUrl>
    ): Effect.Effect<string | null, never, WorkflowEngine.WorkflowEngine> =>
      Effect.gen(function*() {
        if (t.channel_id === null || t.kind === null) return "The conversation has no channel to send through."
        if (t.is_active !== true) return "The conversation's channel is inactive."
        if (t.kind !== "web" && t.kind !== "widget") return `Sending on ${t.kind} channels is not supported by this server.`
        // the files with their signed links, so the contact sees them live, not only in the history
        yield* realtime.publish(t.id, [{ message: text ?? "", cost: 0, message_id: messageId, role: "assistant", is_manual: true, files }])
        if (t.callback_url !== null) yield* deliveries.start(messageId)
        return null
      })

    const send = Effect.fn("Messages.send")(function*(
      conversationId: ConversationId,
      input: { readonly message: string | null; readonly files: ReadonlyArray<Multipart.PersistedFile> }
    ) {
      const actor = yield* CurrentActor
      const found = yield* target(conversationId)
      if (Option.isNone(found)) return yield* new ConversationNotFound()
      const t = found.value
      if (!actor.workspaceIds.includes(t.workspace_id as never)) return yield* new Forbidden({ message: "This action is unauthorized." })
      const text = input.message === null || input.message === "" ? null : input.message
      if (text === null && input.files.length === 0) {
        return yield* Unprocessable.of([{ field: "message", message: "is required when files is not present" }])
      }
      if (input.files.length > MAX_OPERATOR_FILES) {
        return yield* Unprocessable.of([{ field: "files", message: `may not have more than ${MAX_OPERATOR_FILES} items` }])
      }
      const month = new Date().toISOString().slice(0, 7).replace("-", "/")
      // every size is checked before any file is copied, so a refused request leaves nothing in storage
      const sizes = yield* Effect.forEach(input.files, (file) => Effect.promise(() => Fs.promises.stat(file.path)).pipe(Effect.map((s) => s.size)))
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
          yield* sql`insert into files (key, workspace_id, channel_id, name, mimetype, size)
                     values (${f.key}, ${t.workspace_id}, ${t.channel_id}, ${f.name}, ${f.mimetype}, ${f.size})`
        }
        yield* sql`
          insert into messages (id, workspace_id, conversation_id, opportunity_id, contact_id, channel_id, stage_id, pipeline_id,
                                role, status, message, files, external_chat_id, call_type, is_manual, sender_id)
          values (${id}, ${t.workspace_id}, ${t.id}, ${t.opportunity_id}, ${t.contact_id}, ${t.channel_id}, ${t.stage_id},
                  ${t.pipeline_id}, 'assistant', 'created_manually', ${text}, ${JSON.stringify(stored.map((f) => f.entry))}::jsonb,
                  ${t.external_chat_id}, 'manual', true, ${actor.userId})`
      })).pipe(Effect.orDie, Effect.onError(() => Effect.forEach(stored, (f) => storage.remove(f.key))))

      const request = yield* HttpServerRequest.HttpServerRequest
      const base = publicBaseUrl(config, request.headers)
      const withUrls = stored.map((f) => new FileEntryWithUrl({ ...f.entry, url: base + storage.signedPath(f.key) }))
      const rejection = yield* deliver(t, id, text, withUrls)
      yield* realtime.toWorkspace(t.workspace_id, NEW_MESSAGE_EVENT, {
        conversation_id: t.id,
        message_id: id,
        role: "assistant",
        sender: "operator",
        sender_id: actor.userId,
        message: text
      })
      yield* sql`update messages set status = ${rejection === null ? "sent_to_user" : "failed"}, error = ${rejection},
                 updated_at = now() where id = ${id}`.pipe(Effect.orDie)
      const result = yield* record(id, base)
      if (rejection !== null) return yield* new ChannelRejected({ message: rejection, record: result })
      return result
    })

    /**
     * Messages of the caller's workspaces, newest first (SPEC.md 4.5 `list_messages`), keyset-paged on
     * (created_at, id) so a page never repeats or skips a message written meanwhile.
     */
    const list = Effect.fn("Messages.list")(function*(filter: MessagesFilter) {
      const actor = yield* CurrentActor
      const where = [
        sql`m.workspace_id in ${sql.in(actor.workspaceIds)}`,
        // an eval's messages (docs/evals.md) are its run's, not the workspace's
        sql`not exists (select 1 from conversations ec where ec.id = m.conversation_id and ec.is_eval)`,
        ...(filter.pipelineId === undefined ? [] : [sql`m.pipeline_id = ${filter.pipelineId}`]),
        ...(filter.contactId === undefined ? [] : [sql`m.contact_id = ${filter.contactId}`]),
        ...(filter.role === undefined ? [] : [sql`m.role = ${filter.role}`]),
        ...(filter.start === undefined ? [] : [sql`m.created_at >= ${filter.start}`]),
        ...(filter.end === undefined ? [] : [filter.endExclusive ? sql`m.created_at < ${filter.end}` : sql`m.created_at <= ${filter.end}`]),
        ...(filter.cursor === undefined ? [] : [sql`(m.created_at, m.id) < (${filter.cursor.createdAt}::timestamptz, ${filter.cursor.id})`])
      ]
      const rows = yield* sql<{ role: string; handled_reason: string | null }>`
        select m.id, m.conversation_id, m.opportunity_id, m.contact_id, m.pipeline_id, m.stage_id, m.channel_id, m.role, m.message,
               m.status, m.is_manual, m.call_type, m.cost_for_user::float8 as cost_for_user, m.external_message_id,
               m.handled_reason, m.created_at
        from messages m where ${sql.and(where)}
        order by m.created_at desc, m.id desc limit ${filter.limit + 1}`.pipe(
        Effect.flatMap((rows) => Schema.decodeUnknown(Schema.Array(MessageEntry))(rows.map(withNoReplyReason))),
        Effect.orDie
      )
      const page = rows.slice(0, filter.limit)
      const last = page[page.length - 1]
      return new MessagesPage({
        messages: page,
        next_cursor: rows.length > filter.limit && last !== undefined ? encodeMessagesCursor({ createdAt: last.created_at, id: last.id }) : null
      })
    })

    return { send, list }
  })
}) {}
