import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ChannelId,
  ContactId,
  ConversationId,
  HistoryMessage,
  OpportunityId,
  PipelineId,
  StageId,
  withNoReplyReason,
  WorkspaceId
} from "@parley/domain"
import { Effect, flow, Option, Schema, Struct } from "effect"
import * as ConversationWrites from "../tables/ConversationWrites.js"

export const ChannelRow = Schema.Struct({
  id: ChannelId,
  workspace_id: WorkspaceId,
  kind: Schema.String,
  is_active: Schema.Boolean,
  pipeline_id: Schema.NullOr(PipelineId),
  secret_ciphertext: Schema.NullOr(Schema.String),
  callback_url: Schema.NullOr(Schema.String),
  allowed_origins: Schema.Array(Schema.String),
  allowed_ips: Schema.Array(Schema.String)
})
export type ChannelRow = typeof ChannelRow.Type

const ThreadKey = Schema.Struct({
  workspaceId: WorkspaceId,
  channelId: ChannelId,
  pipelineId: Schema.NullOr(PipelineId),
  identifier: Schema.String
})
const ThreadRow = Schema.Struct({
  contact_id: ContactId,
  conversation_id: Schema.NullOr(ConversationId),
  opportunity_id: Schema.NullOr(OpportunityId),
  stage_id: Schema.NullOr(StageId),
  complete: Schema.Boolean
})
const ConversationRow = Schema.Struct({ id: ConversationId })
const NewConversation = Schema.Struct({
  workspace_id: WorkspaceId,
  contact_id: ContactId,
  channel_id: ChannelId,
  external_chat_id: Schema.String
})
const FileRow = Schema.Struct({ key: Schema.String, name: Schema.String, mimetype: Schema.String, size: Schema.Number })

/**
 * A stored message as the history lists it: `handled_reason` read as the public `no_reply_reason`. Only ever decoded.
 */
const HistoryRow = Schema.transform(
  Schema.Struct({
    ...Struct.omit(HistoryMessage.fields, "no_reply_reason"),
    files: Schema.Array(Schema.Unknown),
    handled_reason: Schema.NullOr(Schema.String)
  }),
  Schema.typeSchema(Schema.Struct({ ...HistoryMessage.fields, files: Schema.Array(Schema.Unknown) })),
  {
    strict: true,
    decode: withNoReplyReason,
    encode: ({ no_reply_reason, ...m }) => ({ ...m, handled_reason: no_reply_reason })
  }
)

const idOf = <A extends { readonly id: unknown }>(row: A): A["id"] => row.id

export class WebChatRepo extends Effect.Service<WebChatRepo>()("@parley/server/WebChatRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * A contact's thread on a channel: the contact, its conversation there and its current opportunity in
     * the pipeline; `complete` when nothing is to be created or linked (the conversation, and with a
     * pipeline that opportunity linked to it).
     */
    const threadOf = (workspaceId: number, channelId: number, pipelineId: number | null, identifier: string) =>
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

    const channelByClientId = SqlSchema.findOne({
      Request: Schema.String,
      Result: ChannelRow,
      execute: (clientId) =>
        sql`
          select id, workspace_id, kind, is_active, pipeline_id, secret_ciphertext, callback_url, allowed_origins, allowed_ips
          from channels where client_id = ${clientId}`
    })

    const workspaceStanding = SqlSchema.single({
      Request: WorkspaceId,
      Result: Schema.Struct({ is_subscription_active: Schema.Boolean, credits: Schema.Number }),
      execute: (workspaceId) =>
        sql`
          select is_subscription_active, credits from workspaces where id = ${workspaceId}`
    })

    const pipelineForChat = SqlSchema.single({
      Request: PipelineId,
      Result: Schema.Struct({ is_unknown_contacts_enabled: Schema.Boolean, first_stage_id: Schema.NullOr(StageId) }),
      execute: (pipelineId) =>
        sql`
          select p.is_unknown_contacts_enabled,
                 (select s.id from stages s where s.pipeline_id = p.id order by s.sort_order, s.id limit 1) as first_stage_id
          from pipelines p where p.id = ${pipelineId}`
    })

    /**
     * The whole thread of a returning visitor in one statement: contact, its conversation on the channel,
     * and its current opportunity in the pipeline with whether the conversation is already linked to it.
     */
    const existingThread = SqlSchema.findOne({
      Request: ThreadKey,
      Result: ThreadRow,
      execute: (k) => sql`${threadOf(k.workspaceId, k.channelId, k.pipelineId, k.identifier)}`
    })

    const conversationOnChannel = SqlSchema.findOne({
      Request: Schema.Struct({ channelId: ChannelId, contactId: ContactId }),
      Result: ConversationRow,
      execute: (k) =>
        sql`
          select id from conversations where channel_id = ${k.channelId} and contact_id = ${k.contactId} order by id limit 1`
    })

    const insertConversation = SqlSchema.single({
      Request: NewConversation,
      Result: ConversationRow,
      execute: (c) => sql`${ConversationWrites.insert(sql, c)} returning id`
    })

    const opportunityStage = SqlSchema.single({
      Request: OpportunityId,
      Result: Schema.Struct({ stage_id: StageId }),
      execute: (id) => sql`select stage_id from opportunities where id = ${id}`
    })

    const fileByKey = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: WorkspaceId, key: Schema.String }),
      Result: FileRow,
      execute: (k) =>
        sql`
          select key, name, mimetype, size from files where workspace_id = ${k.workspaceId} and key = ${k.key}`
    })

    /** The channel's conversation for a web-chat contact_id (which wins) or a conversation id. */
    const findThread = SqlSchema.findOne({
      Request: Schema.Struct({
        channelId: ChannelId,
        contactKey: Schema.optional(Schema.String),
        conversationId: Schema.optional(ConversationId)
      }),
      Result: ConversationRow,
      execute: ({ channelId, contactKey, conversationId }) =>
        contactKey !== undefined
          ? sql`
              select id from conversations where channel_id = ${channelId} and external_chat_id = ${contactKey} order by id limit 1`
          : sql`select id from conversations where channel_id = ${channelId} and id = ${conversationId!}`
    })

    const history = SqlSchema.findAll({
      Request: Schema.Struct({ conversationId: ConversationId, page: Schema.Number, perPage: Schema.Number }),
      Result: HistoryRow,
      execute: ({ conversationId, page, perPage }) =>
        sql`
              select m.id, m.role, m.message, m.status, m.files, m.attachments, m.conversation_id, m.opportunity_id, m.error, m.sender_id,
                     case when m.role = 'user' then 'contact' when m.is_manual then 'operator' else 'ai' end as sender,
                     case when m.is_manual then u.name end as sender_name,
                     m.external_message_id, m.handled_reason, m.created_at
              from messages m left join users u on u.id = m.sender_id
              where m.conversation_id = ${conversationId}
              order by m.created_at desc, m.id desc limit ${perPage} offset ${(page - 1) * perPage}`
    })

    const historyTotal = SqlSchema.single({
      Request: ConversationId,
      Result: Schema.Struct({ n: Schema.Number }),
      execute: (conversationId) =>
        sql`select count(*)::int as n from messages where conversation_id = ${conversationId}`
    })

    return {
      channelByClientId: flow(channelByClientId, Effect.orDie),
      workspaceStanding: flow(workspaceStanding, Effect.orDie),
      pipelineForChat: flow(pipelineForChat, Effect.orDie),
      existingThread: (
        workspaceId: WorkspaceId,
        channelId: ChannelId,
        pipelineId: PipelineId | null,
        identifier: string
      ) => existingThread({ workspaceId, channelId, pipelineId, identifier }).pipe(Effect.orDie),
      conversationOnChannel: (channelId: ChannelId, contactId: ContactId) =>
        conversationOnChannel({ channelId, contactId }).pipe(Effect.map(Option.map(idOf)), Effect.orDie),
      insertConversation: flow(insertConversation, Effect.map(idOf), Effect.orDie),
      opportunityStage: flow(opportunityStage, Effect.map((r) => r.stage_id), Effect.orDie),

      fileByKey: (workspaceId: WorkspaceId, key: string) => fileByKey({ workspaceId, key }).pipe(Effect.orDie),
      findThread: (
        channelId: ChannelId,
        by: { contactKey?: string | undefined; conversationId?: ConversationId | undefined }
      ) => findThread({ channelId, ...by }).pipe(Effect.map(Option.map(idOf)), Effect.orDie),
      history: (conversationId: ConversationId, page: number, perPage: number) =>
        Effect.all([history({ conversationId, page, perPage }), Effect.map(historyTotal(conversationId), (r) => r.n)])
          .pipe(Effect.orDie)
    }
  })
}) {}
