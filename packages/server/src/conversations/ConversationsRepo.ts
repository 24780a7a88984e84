/**
 * Conversations as operators read them: the list (keyset-paged on last activity, or on the operators'
 * queue), one conversation, its messages with their delivery attempts, and each user's read marker
 * (`conversation_reads`, written only here).
 */
import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { type ConversationId, type FileEntry, type UserId, type WorkspaceId } from "@parley/domain"
import { Effect, Option } from "effect"

/** A conversation row as selected: flat columns, assembled into ConversationListItem by the service. */
export interface ConversationRow {
  readonly id: number
  readonly workspace_id: number
  readonly status: "active" | "paused"
  readonly is_test: boolean
  readonly channel_id: number | null
  readonly channel_kind: string | null
  readonly contact_id: number
  readonly contact_name: string | null
  readonly contact_email: string | null
  readonly contact_phone: string | null
  readonly contact_identifier: string | null
  readonly opportunity_id: number | null
  readonly opportunity_name: string | null
  readonly pipeline_id: number | null
  readonly stage_id: number | null
  readonly stage_name: string | null
  readonly stage_nature: "neutral" | "won" | "lost" | null
  readonly opportunity_status: string | null
  readonly handoff_state: "ai" | "waiting" | "human"
  readonly handoff_requested_at: string | null
  readonly handoff_requested_by: "contact" | "ai" | "operator" | "rule" | null
  readonly handoff_reason: string | null
  readonly handoff_summary: string | null
  readonly handoff_assignee_id: number | null
  readonly handoff_taken_at: string | null
  readonly handoff_returned_at: string | null
  readonly handoff_return_note: string | null
  readonly handoff_due_at: string | null
  readonly last_message_at: string | null
  readonly last_message_content: string | null
  readonly messages_count: number
  readonly unread_count: number
  readonly activity_at: string
  /** The queue order's sort key with `c.id`: 0 waiting, 1 the caller's, 2 the rest. */
  readonly queue_rank: number
  /** Epoch seconds (numeric, as text): requested_at for rank 0, minus the last activity otherwise. */
  readonly queue_key: string
  readonly created_at: string
  readonly notes: ReadonlyArray<string>
  readonly cost_for_user: number
  readonly avg_response_time: number
}

export interface ConversationFilter {
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly userId: UserId
  readonly pipelineId?: number | undefined
  readonly channelId?: number | undefined
  readonly status?: string | undefined
  readonly handoff?: string | undefined
  readonly assigneeId?: number | undefined
  readonly opportunityId?: number | undefined
  readonly stageId?: number | undefined
  readonly contactId?: number | undefined
  readonly q?: string | undefined
  readonly unread?: boolean | undefined
  readonly order: "activity" | "queue"
  readonly after?: ListCursor | undefined
  readonly limit: number
}

/** Where the previous page ended, in the order it was listed in. */
export type ListCursor =
  | { readonly order: "activity"; readonly activityAt: string; readonly id: number }
  | { readonly order: "queue"; readonly rank: number; readonly key: string; readonly id: number }

export interface MessageRow {
  readonly id: string
  readonly conversation_id: number
  readonly role: "user" | "assistant"
  readonly is_manual: boolean
  readonly sender_id: number | null
  readonly message: string | null
  readonly files: ReadonlyArray<FileEntry>
  readonly status: string
  readonly call_type: string | null
  readonly error: string | null
  readonly handled_reason: string | null
  readonly external_message_id: string | null
  readonly cost_for_user: number
  readonly created_at: string
}

export interface DeliveryRow {
  readonly message_id: string
  readonly attempt: number
  readonly url: string
  readonly status_code: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly created_at: string
}

const like = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

export class ConversationsRepo extends Effect.Service<ConversationsRepo>()("@parley/server/ConversationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // the queue as one ascending key (rank, key, id), so a row value compares the keyset
    const queueRank = (userId: UserId) =>
      sql`(case when c.handoff_state = 'waiting' then 0
                when c.handoff_state = 'human' and c.handoff_assignee_id = ${userId} then 1 else 2 end)`
    const queueKey = sql`(case when c.handoff_state = 'waiting' then extract(epoch from coalesce(c.handoff_requested_at, c.created_at))
                               else -extract(epoch from coalesce(c.last_message_at, c.created_at)) end)`
    const activityOrder = sql`coalesce(c.last_message_at, c.created_at) desc, c.id desc`

    const select = (userId: UserId, where: ReadonlyArray<Fragment>, order: Fragment, limit: number) =>
      sql<ConversationRow>`
        select c.id, c.workspace_id, c.status, c.is_test, c.channel_id, ch.kind as channel_kind,
               ct.id as contact_id, coalesce(ct.custom_name, ct.name) as contact_name, coalesce(ct.custom_email, ct.email) as contact_email,
               coalesce(ct.custom_phone, ct.phone) as contact_phone, ct.identifier as contact_identifier,
               o.id as opportunity_id, o.name as opportunity_name, o.pipeline_id, o.stage_id, s.name as stage_name,
               s.nature as stage_nature, o.status as opportunity_status,
               c.handoff_state, c.handoff_requested_at, c.handoff_requested_by, c.handoff_reason, c.handoff_summary,
               c.handoff_assignee_id, c.handoff_taken_at, c.handoff_returned_at, c.handoff_return_note, c.handoff_due_at,
               c.last_message_at, c.last_message_content, c.messages_count,
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
        where ${sql.and(where)}
        order by ${order}
        limit ${limit}`

    const list = (f: ConversationFilter) => {
      // an eval's conversations (docs/evals.md) are not in the inbox
      const where: Array<Fragment> = [sql`c.workspace_id in ${sql.in(f.workspaceIds)}`, sql`not c.is_eval`]
      if (f.pipelineId !== undefined) where.push(sql`coalesce(o.pipeline_id, ch.pipeline_id) = ${f.pipelineId}`)
      if (f.channelId !== undefined) where.push(sql`c.channel_id = ${f.channelId}`)
      if (f.status !== undefined) where.push(sql`c.status = ${f.status}`)
      if (f.handoff !== undefined) where.push(sql`c.handoff_state = ${f.handoff}`)
      if (f.assigneeId !== undefined) where.push(sql`c.handoff_assignee_id = ${f.assigneeId}`)
      if (f.opportunityId !== undefined) {
        where.push(sql`exists (select 1 from conversation_opportunity co where co.conversation_id = c.id and co.opportunity_id = ${f.opportunityId})`)
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
        where.push(sql`(coalesce(c.last_message_at, c.created_at), c.id) < (${f.after.activityAt}::timestamptz, ${f.after.id})`)
      }
      if (f.after?.order === "queue") {
        where.push(sql`(${queueRank(f.userId)}, ${queueKey}, c.id) > (${f.after.rank}::int, ${f.after.key}::numeric, ${f.after.id})`)
      }
      const order = f.order === "queue" ? sql`${queueRank(f.userId)}, ${queueKey}, c.id` : activityOrder
      // filters on the conversation's own columns: the page's ids come from `conversations` alone, so the
      // opportunity, contact and unread lookups run for the page's rows, not for every conversation
      const ownColumnsOnly = f.pipelineId === undefined && f.stageId === undefined && f.unread === undefined &&
        (f.q === undefined || f.q.trim() === "")
      if (!ownColumnsOnly) return select(f.userId, where, order, f.limit)
      return select(f.userId, [sql`c.id in (select c.id from conversations c where ${sql.and(where)} order by ${order} limit ${f.limit})`], order, f.limit)
    }

    const messages = (conversationId: number, page: {
      readonly direction: "older" | "newer"
      readonly after?: { readonly createdAt: string; readonly id: string } | undefined
      readonly limit: number
    }) => {
      const older = page.direction === "older"
      const cursor = page.after === undefined
        ? sql`true`
        : older
        ? sql`(created_at, id) < (${page.after.createdAt}::timestamptz, ${page.after.id})`
        : sql`(created_at, id) > (${page.after.createdAt}::timestamptz, ${page.after.id})`
      return sql<MessageRow>`
        select id, conversation_id, role, is_manual, sender_id, message, files, status, call_type, error, handled_reason,
               external_message_id, cost_for_user::float8 as cost_for_user, created_at
        from messages where conversation_id = ${conversationId} and ${cursor}
        order by ${older ? sql`created_at desc, id desc` : sql`created_at, id`}
        limit ${page.limit}`
    }

    const deliveries = (messageIds: ReadonlyArray<string>) =>
      messageIds.length === 0
        ? Effect.succeed([] as ReadonlyArray<DeliveryRow>)
        : sql<DeliveryRow>`
            select message_id, attempt, url, status_code, error, duration_ms, created_at
            from webhook_deliveries where message_id in ${sql.in(messageIds)} order by created_at, id`

    const markRead = (userId: UserId, conversationId: number) =>
      sql<{ read_at: string }>`
        insert into conversation_reads (user_id, conversation_id, read_at) values (${userId}, ${conversationId}, now())
        on conflict (user_id, conversation_id) do update set read_at = greatest(conversation_reads.read_at, excluded.read_at)
        returning read_at`.pipe(Effect.map((rows) => rows[0]!.read_at))

    return {
      list: (f: ConversationFilter) => Effect.orDie(list(f)),
      find: (workspaceIds: ReadonlyArray<WorkspaceId>, userId: UserId, id: ConversationId) =>
        select(userId, [sql`c.id = ${id}`, sql`c.workspace_id in ${sql.in(workspaceIds)}`], activityOrder, 1).pipe(
          Effect.map((rows) => Option.fromNullable(rows[0])),
          Effect.orDie
        ),
      messages: (conversationId: number, page: Parameters<typeof messages>[1]) => Effect.orDie(messages(conversationId, page)),
      deliveries: (messageIds: ReadonlyArray<string>) => Effect.orDie(deliveries(messageIds)),
      markRead: (userId: UserId, conversationId: number) => Effect.orDie(markRead(userId, conversationId))
    }
  })
}) {}
