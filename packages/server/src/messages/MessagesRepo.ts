/**
 * The SQL of operator messages (SPEC.md 4.2) and of the messages list (SPEC.md 4.5): the conversation a
 * message goes to, its files and row, the status its hand-off leaves (an operator's message or a turn's
 * reply), and the keyset-paged list.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ConversationId,
  FileEntry,
  MessageEntry,
  MessageRecord,
  type MessagesFilter,
  type TemplateSend,
  withNoReplyReason,
  type WorkspaceId
} from "@parley/domain"
import { Effect, flow, Option, Schema, Struct } from "effect"
import { windowColumns } from "../channels/ServiceWindow.js"
import * as MessageWrites from "../tables/MessageWrites.js"

/** The conversation an operator message goes to: its channel and its newest opportunity's place. */
export const Target = Schema.Struct({
  id: ConversationId,
  workspace_id: Schema.Number,
  contact_id: Schema.Number,
  channel_id: Schema.NullOr(Schema.Number),
  external_chat_id: Schema.NullOr(Schema.String),
  kind: Schema.NullOr(Schema.String),
  is_active: Schema.NullOr(Schema.Boolean),
  callback_url: Schema.NullOr(Schema.String),
  opportunity_id: Schema.NullOr(Schema.Number),
  stage_id: Schema.NullOr(Schema.Number),
  pipeline_id: Schema.NullOr(Schema.Number),
  /** a provider channel with its credentials (the adapter sends, within the provider's rules) */
  has_credentials: Schema.Boolean,
  /** when the contact's latest message was sent, by the provider's clock (ms; provider channels only) */
  contact_sent_at_ms: Schema.NullOr(Schema.Number),
  /** the channel's service window (ms; null: none) */
  service_window_ms: Schema.NullOr(Schema.Number)
})
export type Target = typeof Target.Type

/** A stored message as `send` answers it, before its files get their signed links. */
export const MessageRow = Schema.Struct({ ...MessageRecord.fields, files: Schema.Array(FileEntry) })
export type MessageRow = typeof MessageRow.Type

/** A listed message: `handled_reason` read as the public `no_reply_reason`. Only ever decoded. */
const EntryRow = Schema.transform(
  Schema.encodedSchema(
    Schema.Struct({
      ...Struct.omit(MessageEntry.fields, "no_reply_reason"),
      handled_reason: Schema.NullOr(Schema.String)
    })
  ),
  MessageEntry,
  {
    strict: true,
    decode: withNoReplyReason,
    encode: ({ no_reply_reason, ...m }) => ({ ...m, handled_reason: no_reply_reason })
  }
)

const ListRequest = Schema.Struct({
  workspaceIds: Schema.Array(Schema.Number),
  pipelineId: Schema.optional(Schema.Number),
  contactId: Schema.optional(Schema.Number),
  role: Schema.optional(Schema.Literal("user", "assistant")),
  start: Schema.optional(Schema.DateFromSelf),
  end: Schema.optional(Schema.DateFromSelf),
  endExclusive: Schema.optional(Schema.Boolean),
  cursor: Schema.optional(Schema.Struct({ createdAt: Schema.String, id: Schema.String })),
  limit: Schema.Number
})

export interface NewFile {
  readonly key: string
  readonly workspace_id: number
  readonly channel_id: number | null
  readonly name: string
  readonly mimetype: string
  readonly size: number
}

/** An operator's message as first stored (`created_manually`), on the conversation's current place. */
export interface NewOperatorMessage {
  readonly id: string
  readonly target: Target
  readonly text: string | null
  readonly files: ReadonlyArray<typeof FileEntry.Encoded>
  readonly senderId: number
  /** sent as this approved template (resolved parameters) */
  readonly template: TemplateSend | null
}

export class MessagesRepo extends Effect.Service<MessagesRepo>()("@parley/server/MessagesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const target = SqlSchema.findOne({
      Request: ConversationId,
      Result: Target,
      execute: (id) =>
        sql`
        select c.id, c.workspace_id, c.contact_id, c.channel_id, c.external_chat_id, ch.kind, ch.is_active, ch.callback_url,
               o.id as opportunity_id, o.stage_id, o.pipeline_id,
               coalesce(ch.credentials_ciphertext is not null, false) as has_credentials,
               ${windowColumns(sql)}
        from conversations c
        left join channels ch on ch.id = c.channel_id
        left join lateral (
          select o.id, o.stage_id, o.pipeline_id from conversation_opportunity co join opportunities o on o.id = co.opportunity_id
          where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
        ) o on true
        where c.id = ${id}`
    })

    /** An operator's display name, as the contact is shown it (docs/web-chat.md). */
    const userName = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ name: Schema.NullOr(Schema.String) }),
      execute: (id) => sql`select name from users where id = ${id}`
    })

    const record = SqlSchema.single({
      Request: Schema.String,
      Result: MessageRow,
      execute: (id) =>
        sql`
          select id as "_id", role, status, message, files, cost_for_user::float8 as cost_for_user, external_chat_id, conversation_id,
                 opportunity_id, contact_id, channel_id, stage_id, pipeline_id, call_type, sender_id, error, external_message_id,
                 created_at, updated_at
          from messages where id = ${id}`
    })

    const undelivered = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (conversationId) =>
        sql`select id from messages where conversation_id = ${conversationId} and status = 'ai_generated' order by created_at, id`
    })

    const list = SqlSchema.findAll({
      Request: ListRequest,
      Result: EntryRow,
      execute: (filter) => {
        const where = [
          sql`m.workspace_id in ${sql.in(filter.workspaceIds)}`,
          // an eval's messages (docs/evals.md) are its run's, not the workspace's
          sql`not exists (select 1 from conversations ec where ec.id = m.conversation_id and ec.is_eval)`,
          ...(filter.pipelineId === undefined ? [] : [sql`m.pipeline_id = ${filter.pipelineId}`]),
          ...(filter.contactId === undefined ? [] : [sql`m.contact_id = ${filter.contactId}`]),
          ...(filter.role === undefined ? [] : [sql`m.role = ${filter.role}`]),
          ...(filter.start === undefined ? [] : [sql`m.created_at >= ${filter.start}`]),
          ...(filter.end === undefined
            ? []
            : [filter.endExclusive ? sql`m.created_at < ${filter.end}` : sql`m.created_at <= ${filter.end}`]),
          ...(filter.cursor === undefined
            ? []
            : [sql`(m.created_at, m.id) < (${filter.cursor.createdAt}::timestamptz, ${filter.cursor.id})`])
        ]
        return sql`
        select m.id, m.conversation_id, m.opportunity_id, m.contact_id, m.pipeline_id, m.stage_id, m.channel_id, m.role, m.message,
               m.status, m.is_manual, m.call_type, m.cost_for_user::float8 as cost_for_user, m.external_message_id,
               m.handled_reason, m.created_at
        from messages m where ${sql.and(where)}
        order by m.created_at desc, m.id desc limit ${filter.limit + 1}`
      }
    })

    return {
      target: flow(target, Effect.orDie),
      userName: (id: number) =>
        userName(id).pipe(Effect.map(Option.flatMap((u) => Option.fromNullable(u.name))), Effect.orDie),
      record: flow(record, Effect.orDie),

      insertFile: (f: NewFile) =>
        sql`insert into files (key, workspace_id, channel_id, name, mimetype, size)
                     values (${f.key}, ${f.workspace_id}, ${f.channel_id}, ${f.name}, ${f.mimetype}, ${f.size})`
          .pipe(Effect.asVoid, Effect.orDie),

      insertMessage: ({ files, id, senderId, target: t, template, text }: NewOperatorMessage) =>
        MessageWrites.insert(sql, {
          id,
          workspace_id: t.workspace_id,
          conversation_id: t.id,
          opportunity_id: t.opportunity_id,
          contact_id: t.contact_id,
          channel_id: t.channel_id,
          stage_id: t.stage_id,
          pipeline_id: t.pipeline_id,
          role: "assistant",
          status: "created_manually",
          message: text,
          files: sql`${JSON.stringify(files)}::jsonb`,
          external_chat_id: t.external_chat_id,
          call_type: "manual",
          is_manual: true,
          sender_id: senderId,
          template: template === null ? null : sql`${JSON.stringify(template)}::jsonb`
        }).pipe(Effect.asVoid, Effect.orDie),

      /** Where the hand-off left it: `sent_to_user`, or `failed` with the rejection. */
      setStatus: (id: string, rejection: string | null) =>
        MessageWrites.update(
          sql,
          { status: rejection === null ? "sent_to_user" : "failed", error: rejection, updated_at: sql`now()` },
          sql`where id = ${id}`
        ).pipe(Effect.asVoid, Effect.orDie),

      /** A conversation's replies stored but not yet handed off, oldest first. */
      undelivered: (conversationId: string) =>
        undelivered(conversationId).pipe(Effect.map((rows) => rows.map((r) => r.id)), Effect.orDie),

      /** An eval's reply: recorded as sent, nobody told (docs/evals.md). */
      markSent: (id: string) =>
        MessageWrites.update(sql, { status: "sent_to_user", updated_at: sql`now()` }, sql`where id = ${id}`).pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      /** Newest first, one more than `filter.limit` so the caller knows whether a next page exists. */
      list: (workspaceIds: ReadonlyArray<WorkspaceId>, filter: MessagesFilter) =>
        Effect.orDie(list({ ...filter, workspaceIds }))
    }
  })
}) {}
