/**
 * Conversations as operators read them: the list (keyset-paged on last activity, or on the operators'
 * queue), one conversation, its messages with their delivery attempts, and each user's read marker
 * (`conversation_reads`, written only here).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import {
  type ConversationId,
  ConversationsOrder,
  ConversationStatus,
  DeliveryStatus,
  FileEntry,
  HandoffRequester,
  HandoffState,
  StageNature,
  UserId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Schema } from "effect"
import { windowColumns } from "../channels/ServiceWindow.js"

/** A conversation row as selected: flat columns, assembled into ConversationListItem by the service. */
export const ConversationRow = Schema.Struct({
  id: Schema.Number,
  workspace_id: Schema.Number,
  status: ConversationStatus,
  is_test: Schema.Boolean,
  channel_id: Schema.NullOr(Schema.Number),
  channel_kind: Schema.NullOr(Schema.String),
  contact_id: Schema.Number,
  contact_name: Schema.NullOr(Schema.String),
  contact_email: Schema.NullOr(Schema.String),
  contact_phone: Schema.NullOr(Schema.String),
  contact_identifier: Schema.NullOr(Schema.String),
  opportunity_id: Schema.NullOr(Schema.Number),
  opportunity_name: Schema.NullOr(Schema.String),
  pipeline_id: Schema.NullOr(Schema.Number),
  stage_id: Schema.NullOr(Schema.Number),
  stage_name: Schema.NullOr(Schema.String),
  stage_nature: Schema.NullOr(StageNature),
  opportunity_status: Schema.NullOr(Schema.String),
  handoff_state: HandoffState,
  handoff_requested_at: Schema.NullOr(Schema.String),
  handoff_requested_by: Schema.NullOr(HandoffRequester),
  handoff_reason: Schema.NullOr(Schema.String),
  handoff_summary: Schema.NullOr(Schema.String),
  handoff_assignee_id: Schema.NullOr(Schema.Number),
  handoff_taken_at: Schema.NullOr(Schema.String),
  handoff_returned_at: Schema.NullOr(Schema.String),
  handoff_return_note: Schema.NullOr(Schema.String),
  handoff_due_at: Schema.NullOr(Schema.String),
  last_message_at: Schema.NullOr(Schema.String),
  last_message_content: Schema.NullOr(Schema.String),
  /** the contact's last message, and whether the agent's answer to it failed */
  contact_message: Schema.NullOr(Schema.String),
  reply_failed: Schema.Boolean,
  messages_count: Schema.Number,
  unread_count: Schema.Number,
  activity_at: Schema.String,
  /** The queue order's sort key with `c.id`: 0 waiting, 1 the caller's, 2 the rest. */
  queue_rank: Schema.Number,
  /** Epoch seconds (numeric, as text): requested_at for rank 0, minus the last activity otherwise. */
  queue_key: Schema.String,
  created_at: Schema.String,
  notes: Schema.Array(Schema.String),
  cost_for_user: Schema.Number,
  avg_response_time: Schema.Number
})
export type ConversationRow = typeof ConversationRow.Type

/** Where the previous page ended, in the order it was listed in. */
export const ListCursor = Schema.Union(
  Schema.Struct({ order: Schema.Literal("activity"), activityAt: Schema.String, id: Schema.Number }),
  Schema.Struct({ order: Schema.Literal("queue"), rank: Schema.Number, key: Schema.String, id: Schema.Number })
)
export type ListCursor = typeof ListCursor.Type

export const ConversationFilter = Schema.Struct({
  workspaceIds: Schema.Array(WorkspaceId),
  userId: UserId,
  pipelineId: Schema.optional(Schema.Number),
  channelId: Schema.optional(Schema.Number),
  channelKind: Schema.optional(Schema.String),
  status: Schema.optional(Schema.String),
  handoff: Schema.optional(Schema.String),
  assigneeId: Schema.optional(Schema.Number),
  opportunityId: Schema.optional(Schema.Number),
  stageId: Schema.optional(Schema.Number),
  contactId: Schema.optional(Schema.Number),
  q: Schema.optional(Schema.String),
  unread: Schema.optional(Schema.Boolean),
  order: ConversationsOrder,
  after: Schema.optional(ListCursor),
  limit: Schema.Number
})
export type ConversationFilter = typeof ConversationFilter.Type

/** A page of a conversation's messages, before or after the cursor. */
const MessagesPage = Schema.Struct({
  direction: Schema.Literal("older", "newer"),
  after: Schema.optional(Schema.Struct({ createdAt: Schema.String, id: Schema.String })),
  limit: Schema.Number
})

export const MessageRow = Schema.Struct({
  id: Schema.String,
  conversation_id: Schema.Number,
  role: Schema.Literal("user", "assistant"),
  is_manual: Schema.Boolean,
  sender_id: Schema.NullOr(Schema.Number),
  message: Schema.NullOr(Schema.String),
  files: Schema.Array(FileEntry),
  status: Schema.String,
  call_type: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  handled_reason: Schema.NullOr(Schema.String),
  external_message_id: Schema.NullOr(Schema.String),
  cost_for_user: Schema.Number,
  delivery_status: Schema.NullOr(DeliveryStatus),
  delivered_at: Schema.NullOr(Schema.String),
  read_at: Schema.NullOr(Schema.String),
  /** the knowledge points an AI reply was given (migration 0042), as `ConversationMessage.citations` */
  citations: Schema.NullOr(Schema.Array(Schema.Unknown)),
  created_at: Schema.String
})
export type MessageRow = typeof MessageRow.Type

export const DeliveryRow = Schema.Struct({
  message_id: Schema.String,
  attempt: Schema.Number,
  url: Schema.String,
  status_code: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Number,
  created_at: Schema.String
})
export type DeliveryRow = typeof DeliveryRow.Type

const like = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

export class ConversationsRepo extends Effect.Service<ConversationsRepo>()("@parley/server/ConversationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // the queue as one ascending key (rank, key, id), so a row value compares the keyset
    const queueRank = (userId: number) =>
      sql`(case when c.handoff_state = 'waiting' then 0
                when c.handoff_state = 'human' and c.handoff_assignee_id = ${userId} then 1 else 2 end)`
    const queueKey =
      sql`(case when c.handoff_state = 'waiting' then extract(epoch from coalesce(c.handoff_requested_at, c.created_at))
                               else -extract(epoch from coalesce(c.last_message_at, c.created_at)) end)`
    const activityOrder = sql`coalesce(c.last_message_at, c.created_at) desc, c.id desc`

    const select = (userId: number, where: ReadonlyArray<Fragment>, order: Fragment, limit: number) =>
      sql`
        select c.id, c.workspace_id, c.status, c.is_test, c.channel_id, ch.kind as channel_kind,
               ct.id as contact_id, coalesce(ct.custom_name, ct.name) as contact_name, coalesce(ct.custom_email, ct.email) as contact_email,
               coalesce(ct.custom_phone, ct.phone) as contact_phone, ct.identifier as contact_identifier,
               o.id as opportunity_id, o.name as opportunity_name, o.pipeline_id, o.stage_id, s.name as stage_name,
               s.nature as stage_nature, o.status as opportunity_status,
               c.handoff_state, c.handoff_requested_at, c.handoff_requested_by, c.handoff_reason, c.handoff_summary,
               c.handoff_assignee_id, c.handoff_taken_at, c.handoff_returned_at, c.handoff_return_note, c.handoff_due_at,
               c.last_message_at, c.last_message_content, lu.message as contact_message,
               coalesce(lu.handled_reason in ('provider_error', 'reply_withheld', 'failed'), false) as reply_failed, c.messages_count,
               (select count(*)::int from messages m
                where m.conversation_id = c.id and m.role = 'user' and m.created_at > coalesce(r.read_at, '-infinity')) as unread_count,
               coalesce(c.last_message_at, c.created_at) as activity_at, ${queueRank(userId)} as queue_rank,
               ${queueKey}::text as queue_key, c.created_at, c.notes,
               c.cost_for_user::float8 as cost_for_user,
               case when c.responses_count = 0 then 0 else c.response_seconds_total / c.responses_count end as avg_response_time
        from conversations c
        join contacts ct on ct.id = c.contact_id
        left join channels ch on ch.id = c.channel_id
        left join conversation_reads r on r.conversation_id = c.id and r.user_id = ${userId}
        left join lateral (
          select o.id, o.name, o.pipeline_id, o.stage_id, o.status from conversation_opportunity co
          join opportunities o on o.id = co.opportunity_id
          where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
        ) o on true
        left join stages s on s.id = o.stage_id
        left join lateral (
          select m.message, m.handled_reason from messages m where m.conversation_id = c.id and m.role = 'user'
          order by m.created_at desc, m.id desc limit 1
        ) lu on true
        where ${sql.and(where)}
        order by ${order}
        limit ${limit}`

    const selectList = (f: typeof ConversationFilter.Encoded) => {
      // an eval's conversations (docs/evals.md) are not in the inbox
      const where: Array<Fragment> = [sql`c.workspace_id in ${sql.in(f.workspaceIds)}`, sql`not c.is_eval`]
      if (f.pipelineId !== undefined) where.push(sql`coalesce(o.pipeline_id, ch.pipeline_id) = ${f.pipelineId}`)
      if (f.channelId !== undefined) where.push(sql`c.channel_id = ${f.channelId}`)
      if (f.channelKind !== undefined) where.push(sql`ch.kind = ${f.channelKind}`)
      if (f.status !== undefined) where.push(sql`c.status = ${f.status}`)
      if (f.handoff !== undefined) where.push(sql`c.handoff_state = ${f.handoff}`)
      if (f.assigneeId !== undefined) where.push(sql`c.handoff_assignee_id = ${f.assigneeId}`)
      if (f.opportunityId !== undefined) {
        where.push(
          sql`exists (select 1 from conversation_opportunity co where co.conversation_id = c.id and co.opportunity_id = ${f.opportunityId})`
        )
      }
      if (f.stageId !== undefined) where.push(sql`o.stage_id = ${f.stageId}`)
      if (f.contactId !== undefined) where.push(sql`c.contact_id = ${f.contactId}`)
      if (f.q !== undefined && f.q.trim() !== "") {
        const pattern = like(f.q.trim())
        where.push(sql`(
          coalesce(ct.custom_name, ct.name) ilike ${pattern} or coalesce(ct.custom_email, ct.email) ilike ${pattern}
          or coalesce(ct.custom_phone, ct.phone) ilike ${pattern} or ct.identifier ilike ${pattern}
          or exists (select 1 from messages m where m.conversation_id = c.id and m.message ilike ${pattern}))`)
      }
      if (f.unread === true) {
        where.push(sql`exists (select 1 from messages m where m.conversation_id = c.id and m.role = 'user'
                                and m.created_at > coalesce(r.read_at, '-infinity'))`)
      }
      if (f.unread === false) {
        where.push(sql`not exists (select 1 from messages m where m.conversation_id = c.id and m.role = 'user'
                                    and m.created_at > coalesce(r.read_at, '-infinity'))`)
      }
      if (f.after?.order === "activity") {
        where.push(
          sql`(coalesce(c.last_message_at, c.created_at), c.id) < (${f.after.activityAt}::timestamptz, ${f.after.id})`
        )
      }
      if (f.after?.order === "queue") {
        where.push(
          sql`(${
            queueRank(f.userId)
          }, ${queueKey}, c.id) > (${f.after.rank}::int, ${f.after.key}::numeric, ${f.after.id})`
        )
      }
      const order = f.order === "queue" ? sql`${queueRank(f.userId)}, ${queueKey}, c.id` : activityOrder
      // filters on the conversation's own columns: the page's ids come from `conversations` alone, so the
      // opportunity, contact and unread lookups run for the page's rows, not for every conversation
      const ownColumnsOnly = f.pipelineId === undefined && f.stageId === undefined && f.unread === undefined &&
        (f.q === undefined || f.q.trim() === "")
      if (!ownColumnsOnly) return select(f.userId, where, order, f.limit)
      return select(
        f.userId,
        [sql`c.id in (select c.id from conversations c where ${sql.and(where)} order by ${order} limit ${f.limit})`],
        order,
        f.limit
      )
    }

    const list = SqlSchema.findAll({ Request: ConversationFilter, Result: ConversationRow, execute: selectList })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceIds: Schema.Array(Schema.Number), userId: Schema.Number, id: Schema.Number }),
      Result: ConversationRow,
      execute: ({ id, userId, workspaceIds }) =>
        select(userId, [sql`c.id = ${id}`, sql`c.workspace_id in ${sql.in(workspaceIds)}`], activityOrder, 1)
    })

    const messages = SqlSchema.findAll({
      Request: Schema.Struct({ conversationId: Schema.Number, page: MessagesPage }),
      Result: MessageRow,
      execute: ({ conversationId, page }) => {
        const older = page.direction === "older"
        const cursor = page.after === undefined
          ? sql`true`
          : older
          ? sql`(created_at, id) < (${page.after.createdAt}::timestamptz, ${page.after.id})`
          : sql`(created_at, id) > (${page.after.createdAt}::timestamptz, ${page.after.id})`
        return sql`
          select id, conversation_id, role, is_manual, sender_id, message, files, status, call_type, error, handled_reason,
                 external_message_id, cost_for_user::float8 as cost_for_user, delivery_status, delivered_at, read_at,
                 citations, created_at
          from messages where conversation_id = ${conversationId} and ${cursor}
          order by ${older ? sql`created_at desc, id desc` : sql`created_at, id`}
          limit ${page.limit}`
      }
    })

    /** The channel's window and when the contact's latest message was sent by the provider's clock (ms). */
    const window = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({
        contact_sent_at_ms: Schema.NullOr(Schema.Number),
        service_window_ms: Schema.NullOr(Schema.Number)
      }),
      execute: (conversationId) =>
        sql`
          select ${windowColumns(sql)}
          from conversations c left join channels ch on ch.id = c.channel_id where c.id = ${conversationId}`
    })

    const deliveries = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: DeliveryRow,
      execute: (messageIds) =>
        sql`
          select message_id, attempt, url, status_code, error, duration_ms, created_at
          from webhook_deliveries where message_id in ${sql.in(messageIds)} order by created_at, id`
    })

    const markRead = SqlSchema.single({
      Request: Schema.Struct({ userId: Schema.Number, conversationId: Schema.Number }),
      Result: Schema.Struct({ read_at: Schema.String }),
      execute: ({ conversationId, userId }) =>
        sql`
          insert into conversation_reads (user_id, conversation_id, read_at) values (${userId}, ${conversationId}, now())
          on conflict (user_id, conversation_id) do update set read_at = greatest(conversation_reads.read_at, excluded.read_at)
          returning read_at`
    })

    return {
      list: (f: ConversationFilter) => Effect.orDie(list(f)),
      find: (workspaceIds: ReadonlyArray<WorkspaceId>, userId: UserId, id: ConversationId) =>
        Effect.orDie(find({ workspaceIds, userId, id })),
      messages: (conversationId: number, page: typeof MessagesPage.Type) =>
        Effect.orDie(messages({ conversationId, page })),
      window: (conversationId: number) => Effect.orDie(window(conversationId)),
      deliveries: (messageIds: ReadonlyArray<string>) =>
        messageIds.length === 0 ? Effect.succeed<ReadonlyArray<DeliveryRow>>([]) : Effect.orDie(deliveries(messageIds)),
      markRead: (userId: UserId, conversationId: number) =>
        markRead({ userId, conversationId }).pipe(Effect.map((r) => r.read_at), Effect.orDie)
    }
  })
}) {}
