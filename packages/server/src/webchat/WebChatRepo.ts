import { SqlClient } from "@effect/sql"
import {
  type ChannelId,
  type ContactId,
  type ConversationId,
  type FileEntry,
  HistoryMessage,
  type OpportunityId,
  type PipelineId,
  type StageId,
  withNoReplyReason,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"

export interface ChannelRow {
  readonly id: ChannelId
  readonly workspace_id: WorkspaceId
  readonly kind: string
  readonly is_active: boolean
  readonly pipeline_id: PipelineId | null
  readonly secret_ciphertext: string | null
  readonly callback_url: string | null
  readonly allowed_origins: ReadonlyArray<string>
  readonly allowed_ips: ReadonlyArray<string>
}

export interface NewMessage {
  readonly id: string
  readonly workspace_id: WorkspaceId
  readonly conversation_id: ConversationId
  readonly opportunity_id: OpportunityId | null
  readonly contact_id: ContactId
  readonly channel_id: ChannelId
  readonly stage_id: StageId | null
  readonly pipeline_id: PipelineId | null
  readonly role: "user" | "assistant"
  readonly status: string
  readonly message: string | null
  readonly files: ReadonlyArray<FileEntry>
  readonly attachments: ReadonlyArray<unknown>
  readonly external_chat_id: string
  readonly call_type: string
  readonly is_manual: boolean
  readonly sender_id: number | null
}

const decodeHistory = Schema.decodeUnknown(Schema.Array(Schema.Struct({
  ...HistoryMessage.fields,
  files: Schema.Array(Schema.Unknown)
})))

/** A returning visitor's message: its own columns (the thread's are read by the statement). */
export type ReturningMessage = Pick<
  NewMessage,
  "id" | "workspace_id" | "channel_id" | "pipeline_id" | "message" | "files" | "attachments" | "external_chat_id"
>

export class WebChatRepo extends Effect.Service<WebChatRepo>()("@parley/server/WebChatRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

    /**
     * A contact's thread on a channel: the contact, its conversation there and its current opportunity in
     * the pipeline; `complete` when nothing is to be created or linked (the conversation, and with a
     * pipeline that opportunity linked to it).
     */
    const threadOf = (workspaceId: WorkspaceId, channelId: ChannelId, pipelineId: PipelineId | null, identifier: string) =>
      sql`
        select t.*, t.conversation_id is not null and (${pipelineId}::int8 is null or (t.opportunity_id is not null and t.linked)) as complete
        from (
          select c.id as contact_id, cv.id as conversation_id, o.id as opportunity_id, o.stage_id,
                 exists (select 1 from conversation_opportunity co
                         where co.opportunity_id = o.id and co.conversation_id = cv.id) as linked
          from contacts c
          left join lateral (select id from conversations where channel_id = ${channelId} and contact_id = c.id
                             order by id limit 1) cv on true
          left join lateral (select id, stage_id from opportunities
                             where contact_id = c.id and pipeline_id = ${pipelineId}
                             order by created_at desc, id desc limit 1) o on true
          where c.workspace_id = ${workspaceId} and c.identifier = ${identifier}
        ) t`

    return {
      channelByClientId: (clientId: string) =>
        sql<ChannelRow>`
          select id, workspace_id, kind, is_active, pipeline_id, secret_ciphertext, callback_url, allowed_origins, allowed_ips
          from channels where client_id = ${clientId}`.pipe(Effect.map(first), Effect.orDie),

      workspaceStanding: (workspaceId: WorkspaceId) =>
        sql<{ is_subscription_active: boolean; credits: number }>`
          select is_subscription_active, credits from workspaces where id = ${workspaceId}`.pipe(
          Effect.map((rows) => rows[0]!),
          Effect.orDie
        ),

      pipelineForChat: (pipelineId: PipelineId) =>
        sql<{ is_unknown_contacts_enabled: boolean; first_stage_id: StageId | null }>`
          select p.is_unknown_contacts_enabled,
                 (select s.id from stages s where s.pipeline_id = p.id order by s.sort_order, s.id limit 1) as first_stage_id
          from pipelines p where p.id = ${pipelineId}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie),

      /**
       * The whole thread of a returning visitor in one statement: contact, its conversation on the channel,
       * and its current opportunity in the pipeline with whether the conversation is already linked to it.
       */
      existingThread: (workspaceId: WorkspaceId, channelId: ChannelId, pipelineId: PipelineId | null, identifier: string) =>
        sql<{
          contact_id: ContactId
          conversation_id: ConversationId | null
          opportunity_id: OpportunityId | null
          stage_id: StageId | null
          complete: boolean
        }>`${threadOf(workspaceId, channelId, pipelineId, identifier)}`.pipe(Effect.map(first), Effect.orDie),

      /**
       * A returning visitor's message in one statement, atomic by itself: stored on its thread (as
       * `existingThread` reads it) when the thread is complete; else nothing is stored and the caller opens it.
       */
      insertOnExistingThread: (m: ReturningMessage) =>
        sql<{ conversation_id: ConversationId }>`
          with t as (${threadOf(m.workspace_id, m.channel_id, m.pipeline_id, m.external_chat_id)})
          insert into messages (id, workspace_id, conversation_id, opportunity_id, contact_id, channel_id, stage_id, pipeline_id,
                                role, status, message, files, attachments, external_chat_id, call_type, is_manual, sender_id)
          select ${m.id}, ${m.workspace_id}, t.conversation_id, t.opportunity_id, t.contact_id, ${m.channel_id}, t.stage_id,
                 ${m.pipeline_id}, 'user', 'received', ${m.message}, ${JSON.stringify(m.files)}::jsonb,
                 ${JSON.stringify(m.attachments)}::jsonb, ${m.external_chat_id}, 'web_chat', false, null
          from t
          where t.complete
          returning conversation_id`.pipe(Effect.map((rows) => Option.map(first(rows), (r) => r.conversation_id)), Effect.orDie),

      contactByIdentifier: (workspaceId: WorkspaceId, identifier: string) =>
        sql<{ id: ContactId }>`select id from contacts where workspace_id = ${workspaceId} and identifier = ${identifier}`.pipe(
          Effect.map((rows) => Option.map(first(rows), (r) => r.id)),
          Effect.orDie
        ),

      /** Nothing when a concurrent first message created it meanwhile (the identifier is unique per workspace). */
      insertContactWithIdentifier: (workspaceId: WorkspaceId, identifier: string) =>
        sql<{ id: ContactId }>`
          insert into contacts (workspace_id, identifier) values (${workspaceId}, ${identifier})
          on conflict do nothing returning id`.pipe(Effect.map((rows) => Option.map(first(rows), (r) => r.id)), Effect.orDie),

      conversationOnChannel: (channelId: ChannelId, contactId: ContactId) =>
        sql<{ id: ConversationId }>`
          select id from conversations where channel_id = ${channelId} and contact_id = ${contactId} order by id limit 1`.pipe(
          Effect.map((rows) => Option.map(first(rows), (r) => r.id)),
          Effect.orDie
        ),

      insertConversation: (c: { workspace_id: WorkspaceId; contact_id: ContactId; channel_id: ChannelId; external_chat_id: string }) =>
        sql<{ id: ConversationId }>`
          insert into conversations (workspace_id, contact_id, channel_id, external_chat_id)
          values (${c.workspace_id}, ${c.contact_id}, ${c.channel_id}, ${c.external_chat_id}) returning id`.pipe(
          Effect.map((rows) => rows[0]!.id),
          Effect.orDie
        ),

      opportunityStage: (id: OpportunityId) =>
        sql<{ stage_id: StageId }>`select stage_id from opportunities where id = ${id}`.pipe(
          Effect.map((rows) => rows[0]!.stage_id),
          Effect.orDie
        ),

      insertMessage: (m: NewMessage) =>
        sql`
          insert into messages (id, workspace_id, conversation_id, opportunity_id, contact_id, channel_id, stage_id, pipeline_id,
                                role, status, message, files, attachments, external_chat_id, call_type, is_manual, sender_id)
          values (${m.id}, ${m.workspace_id}, ${m.conversation_id}, ${m.opportunity_id}, ${m.contact_id}, ${m.channel_id},
                  ${m.stage_id}, ${m.pipeline_id}, ${m.role}, ${m.status}, ${m.message}, ${JSON.stringify(m.files)}::jsonb,
                  ${JSON.stringify(m.attachments)}::jsonb, ${m.external_chat_id}, ${m.call_type}, ${m.is_manual}, ${m.sender_id})`
          .pipe(Effect.asVoid, Effect.orDie),

      idempotentMessage: (channelId: ChannelId, key: string) =>
        sql<{ message_id: string; conversation_id: number }>`
          select k.message_id, m.conversation_id from idempotency_keys k join messages m on m.id = k.message_id
          where k.channel_id = ${channelId} and k.key = ${key}`.pipe(
          Effect.map((rows) => Option.map(first(rows), (r) => ({ messageId: r.message_id, conversationId: r.conversation_id }))),
          Effect.orDie
        ),

      rememberIdempotency: (channelId: ChannelId, key: string, messageId: string) =>
        sql`insert into idempotency_keys (channel_id, key, message_id) values (${channelId}, ${key}, ${messageId})`,

      insertFile: (f: { key: string; workspace_id: WorkspaceId; channel_id: ChannelId; name: string; mimetype: string; size: number }) =>
        sql`insert into files (key, workspace_id, channel_id, name, mimetype, size)
            values (${f.key}, ${f.workspace_id}, ${f.channel_id}, ${f.name}, ${f.mimetype}, ${f.size})`.pipe(Effect.asVoid, Effect.orDie),

      fileByKey: (workspaceId: WorkspaceId, key: string) =>
        sql<{ key: string; name: string; mimetype: string; size: number }>`
          select key, name, mimetype, size from files where workspace_id = ${workspaceId} and key = ${key}`.pipe(
          Effect.map(first),
          Effect.orDie
        ),

      /** The channel's conversation for a web-chat contact_id (which wins) or a conversation id. */
      findThread: (channelId: ChannelId, by: { contactKey?: string | undefined; conversationId?: ConversationId | undefined }) =>
        (by.contactKey !== undefined
          ? sql<{ id: ConversationId }>`
              select id from conversations where channel_id = ${channelId} and external_chat_id = ${by.contactKey} order by id limit 1`
          : sql<{ id: ConversationId }>`select id from conversations where channel_id = ${channelId} and id = ${by.conversationId!}`)
          .pipe(Effect.map((rows) => Option.map(first(rows), (r) => r.id)), Effect.orDie),

      history: (conversationId: ConversationId, page: number, perPage: number) =>
        Effect.all([
          sql<{ role: string; handled_reason: string | null }>`
              select id, role, message, status, files, attachments, conversation_id, opportunity_id, error, sender_id, external_message_id,
                     handled_reason, created_at
              from messages where conversation_id = ${conversationId}
              order by created_at desc, id desc limit ${perPage} offset ${(page - 1) * perPage}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) => Effect.orDie(decodeHistory(rows.map(withNoReplyReason))))
          ),
          sql<{ n: number }>`select count(*)::int as n from messages where conversation_id = ${conversationId}`.pipe(
            Effect.map((rows) => rows[0]!.n),
            Effect.orDie
          )
        ])
    }
  })
}) {}
