import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import {
  ChannelId,
  ContactId,
  type ConversationId,
  type ConversationStatus,
  OpportunityId,
  PipelineId,
  type Priority,
  StageId,
  TagId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import * as ConversationWrites from "../tables/ConversationWrites.js"
import {
  ConversationRow,
  IdRow,
  InWorkspace,
  InWorkspaces,
  NewContact,
  NewConversation,
  NewOpportunity,
  type OpportunityChanges,
  OpportunityRow
} from "./OpportunityRows.js"

/**
 * The one writer of opportunities, stage entries, and the contacts and tags a create or update touches (with
 * the lookups those writes need); the conversations it opens or changes are ConversationWrites' statements.
 * Reads of whole opportunities are OpportunityReads'.
 */
export class OpportunitiesRepo extends Effect.Service<OpportunitiesRepo>()("@parley/server/OpportunitiesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const idOf = <A>(row: { readonly id: A }) => row.id

    const inWorkspaces = (column: string, ids: ReadonlyArray<number>) => sql`${sql.literal(column)} in ${sql.in(ids)}`

    const pipeline = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: Schema.Struct({ id: PipelineId, workspace_id: WorkspaceId }),
      execute: ({ id, workspaceIds }) =>
        sql`
          select id, workspace_id from pipelines where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`
    })

    const stage = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: Schema.Struct({ id: StageId, pipeline_id: PipelineId }),
      execute: ({ id, workspaceIds }) =>
        sql`
          select id, pipeline_id from stages where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`
    })

    const firstStage = SqlSchema.findOne({
      Request: Schema.Number,
      Result: IdRow(StageId),
      execute: (pipelineId) =>
        sql`select id from stages where pipeline_id = ${pipelineId} order by sort_order, id limit 1`
    })

    const contactByPhone = SqlSchema.findOne({
      Request: InWorkspace({ phone: Schema.String }),
      Result: IdRow(ContactId),
      execute: ({ phone, workspaceId }) =>
        sql`select id from contacts where workspace_id = ${workspaceId} and phone = ${phone}`
    })

    const contactByIdentifier = SqlSchema.findOne({
      Request: InWorkspace({ identifier: Schema.String }),
      Result: IdRow(ContactId),
      execute: ({ identifier, workspaceId }) =>
        sql`select id from contacts where workspace_id = ${workspaceId} and identifier = ${identifier}`
    })

    /**
     * A web-chat visitor's contact; nothing when a concurrent first message created it meanwhile (the identifier is
     * unique per workspace).
     */
    const insertContactWithIdentifier = SqlSchema.findOne({
      Request: InWorkspace({ identifier: Schema.String }),
      Result: IdRow(ContactId),
      execute: ({ identifier, workspaceId }) =>
        sql`insert into contacts (workspace_id, identifier) values (${workspaceId}, ${identifier}) on conflict do nothing returning id`
    })

    const contactByEmail = SqlSchema.findOne({
      Request: InWorkspace({ email: Schema.String }),
      Result: IdRow(ContactId),
      execute: ({ email, workspaceId }) =>
        sql`select id from contacts where workspace_id = ${workspaceId} and lower(email) = lower(${email})`
    })

    const insertContact = SqlSchema.findOne({
      Request: NewContact,
      Result: IdRow(ContactId),
      execute: (c) =>
        sql`
          insert into contacts (workspace_id, name, email, phone, priority, is_eval)
          values (${c.workspace_id}, ${c.name}, ${c.email}, ${c.phone}, ${c.priority}, ${c.is_eval ?? false})
          on conflict do nothing returning id`
    })

    const newestOpportunityOf = SqlSchema.findOne({
      Request: Schema.Struct({ contactId: Schema.Number, pipelineId: Schema.Number }),
      Result: IdRow(OpportunityId),
      execute: ({ contactId, pipelineId }) =>
        sql`
          select id from opportunities where contact_id = ${contactId} and pipeline_id = ${pipelineId}
          order by created_at desc, id desc limit 1`
    })

    const insertOpportunity = SqlSchema.single({
      Request: NewOpportunity,
      Result: IdRow(OpportunityId),
      execute: (o) =>
        sql`
          insert into opportunities (workspace_id, pipeline_id, stage_id, contact_id, status, name, notes, context, is_test, source, source_id,
                                     is_eval, config_version_id)
          values (${o.workspace_id}, ${o.pipeline_id}, ${o.stage_id}, ${o.contact_id}, ${o.status}, ${o.name}, ${o.notes},
                  ${
          o.context === null ? null : JSON.stringify(o.context)
        }::jsonb, ${o.is_test}, ${o.source}, ${o.source_id}, ${o.is_eval ?? false},
                  ${o.config_version_id ?? null})
          returning id`
    })

    const tagsNamed = SqlSchema.findAll({
      Request: InWorkspace({ names: Schema.Array(Schema.String) }),
      Result: IdRow(TagId),
      execute: ({ names, workspaceId }) =>
        sql`
            select id from tags where workspace_id = ${workspaceId} and lower(name) in ${sql.in(names)}`
    })

    const pipelineChannel = SqlSchema.single({
      Request: Schema.Number,
      Result: IdRow(Schema.NullOr(ChannelId)),
      execute: (pipelineId) => sql`select min(id) as id from channels where pipeline_id = ${pipelineId}`
    })

    const conversationOn = SqlSchema.findOne({
      Request: Schema.Struct({ contactId: Schema.Number, channelId: Schema.NullOr(Schema.Number) }),
      Result: ConversationRow,
      execute: ({ channelId, contactId }) =>
        sql`
          select id, status from conversations
          where contact_id = ${contactId} and channel_id is not distinct from ${channelId}
          order by id limit 1`
    })

    const insertConversation = SqlSchema.single({
      Request: NewConversation,
      Result: ConversationRow,
      execute: (c) =>
        sql`${
          ConversationWrites.insert(sql, {
            workspace_id: c.workspace_id,
            contact_id: c.contact_id,
            channel_id: c.channel_id,
            is_test: c.is_test,
            is_eval: c.is_eval ?? false
          })
        } returning id, status`
    })

    const base = SqlSchema.single({
      Request: Schema.Number,
      Result: OpportunityRow,
      execute: (id) =>
        sql`
          select id, workspace_id, status, contact_id, stage_id, pipeline_id, name, notes, context, is_test, source, source_id,
                 created_at, updated_at
          from opportunities where id = ${id}`
    })

    const conversation = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: ConversationRow,
      execute: ({ id, workspaceIds }) =>
        sql`
          select id, status from conversations where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`
    })

    return {
      pipeline: (workspaceIds: ReadonlyArray<WorkspaceId>, id: PipelineId) =>
        Effect.orDie(pipeline({ workspaceIds, id })),

      stage: (workspaceIds: ReadonlyArray<WorkspaceId>, id: StageId) => Effect.orDie(stage({ workspaceIds, id })),

      firstStage: (pipelineId: PipelineId) => firstStage(pipelineId).pipe(Effect.map(Option.map(idOf)), Effect.orDie),

      /**
       * A contact of the workspace that already has an opportunity in one of the caller's pipelines (SPEC.md 4.1 rule
       * 1).
       */
      contactWithOpportunity: (workspaceIds: ReadonlyArray<WorkspaceId>, workspaceId: WorkspaceId, id: ContactId) =>
        sql<{ id: ContactId }>`
          select c.id from contacts c
          where c.id = ${id} and c.workspace_id = ${workspaceId}
            and exists (select 1 from opportunities o where o.contact_id = c.id and ${
          inWorkspaces("o.workspace_id", workspaceIds)
        })`
          .pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),

      contactByPhone: (workspaceId: WorkspaceId, phone: string) =>
        contactByPhone({ workspaceId, phone }).pipe(Effect.map(Option.map(idOf)), Effect.orDie),

      contactByIdentifier: (workspaceId: WorkspaceId, identifier: string) =>
        contactByIdentifier({ workspaceId, identifier }).pipe(Effect.map(Option.map(idOf)), Effect.orDie),

      insertContactWithIdentifier: (workspaceId: WorkspaceId, identifier: string) =>
        insertContactWithIdentifier({ workspaceId, identifier }).pipe(Effect.map(Option.map(idOf)), Effect.orDie),

      contactByEmail: (workspaceId: WorkspaceId, email: string) =>
        contactByEmail({ workspaceId, email }).pipe(Effect.map(Option.map(idOf)), Effect.orDie),

      /** Inserts unless phone or email is taken meanwhile (a concurrent create): then nothing is returned. */
      insertContact: (c: typeof NewContact.Type) => insertContact(c).pipe(Effect.map(Option.map(idOf)), Effect.orDie),

      /** Serialises creates for one contact so "return the current opportunity" cannot race. */
      lockContact: (id: ContactId) =>
        sql`select id from contacts where id = ${id} for update`.pipe(Effect.asVoid, Effect.orDie),

      /**
       * Fills identity fields the contact does not have yet; never overwrites, never takes another contact's phone or
       * email.
       */
      fillContact: (
        id: ContactId,
        workspaceId: WorkspaceId,
        c: { name: string | null; email: string | null; phone: string | null }
      ) =>
        sql`
          update contacts set
            name = coalesce(name, ${c.name}),
            email = case when email is null and ${c.email}::text is not null and not exists (
                      select 1 from contacts x where x.workspace_id = ${workspaceId} and lower(x.email) = lower(${c.email}))
                    then ${c.email} else email end,
            phone = case when phone is null and ${c.phone}::text is not null and not exists (
                      select 1 from contacts x where x.workspace_id = ${workspaceId} and x.phone = ${c.phone})
                    then ${c.phone} else phone end,
            updated_at = now()
          where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      updateContactOverrides: (
        id: ContactId,
        o: {
          custom_name?: string | null
          custom_email?: string | null
          custom_phone?: string | null
          priority?: Priority
        }
      ) => {
        const set: Array<Statement.Fragment> = []
        if (o.custom_name !== undefined) set.push(sql`custom_name = ${o.custom_name}`)
        if (o.custom_email !== undefined) set.push(sql`custom_email = ${o.custom_email}`)
        if (o.custom_phone !== undefined) set.push(sql`custom_phone = ${o.custom_phone}`)
        if (o.priority !== undefined) set.push(sql`priority = ${o.priority}`)
        return set.length === 0
          ? Effect.void
          : sql`update contacts set ${sql.csv([...set, sql`updated_at = now()`])} where id = ${id}`.pipe(
            Effect.asVoid,
            Effect.orDie
          )
      },

      newestOpportunityOf: (contactId: ContactId, pipelineId: PipelineId) =>
        newestOpportunityOf({ contactId, pipelineId }).pipe(Effect.map(Option.map(idOf)), Effect.orDie),

      insertOpportunity: (o: NewOpportunity) => insertOpportunity(o).pipe(Effect.map(idOf), Effect.orDie),

      updateOpportunity: (id: OpportunityId, c: OpportunityChanges) => {
        const set: Array<Statement.Fragment> = []
        if (c.stage_id !== undefined) set.push(sql`stage_id = ${c.stage_id}`)
        if (c.name !== undefined) set.push(sql`name = ${c.name}`)
        if (c.notes !== undefined) set.push(sql`notes = ${c.notes}`)
        if (c.status !== undefined) set.push(sql`status = ${c.status}`)
        if (c.context === null) set.push(sql`context = null`)
        else if (c.context !== undefined) {
          set.push(sql`context = coalesce(context, '{}'::jsonb) || ${JSON.stringify(c.context)}::jsonb`)
        }
        return sql`update opportunities set ${sql.csv([...set, sql`updated_at = now()`])} where id = ${id}`.pipe(
          Effect.asVoid,
          Effect.orDie
        )
      },

      /**
       * The stage-entry outbox row (SPEC.md 3.1: stage-start automations), in the caller's transaction.
       * `inbound`: made by the contact's own arrival through web chat, not by a create over the API.
       */
      recordStageEntry: (e: {
        workspace_id: WorkspaceId
        opportunity_id: OpportunityId
        pipeline_id: PipelineId
        stage_id: StageId
        previous_stage_id: StageId | null
        cause: "created" | "inbound" | "moved"
      }) =>
        sql`insert into stage_entries (workspace_id, opportunity_id, pipeline_id, stage_id, previous_stage_id, cause)
            values (${e.workspace_id}, ${e.opportunity_id}, ${e.pipeline_id}, ${e.stage_id}, ${e.previous_stage_id}, ${e.cause})`
          .pipe(Effect.asVoid, Effect.orDie),

      /** Marks a stage entry consumed (its automations run once): false when it already was. */
      consumeStageEntry: (entryId: number) =>
        sql`update stage_entries set consumed_at = now() where id = ${entryId} and consumed_at is null returning id`
          .pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),

      /** Tag ids for names, creating the missing ones (names are unique per workspace, case-insensitively). */
      ensureTags: (workspaceId: WorkspaceId, names: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const unique = [...new Map(names.map((n) => [n.toLowerCase(), n])).values()]
          if (unique.length === 0) return [] as Array<TagId>
          for (const name of unique) {
            yield* sql`insert into tags (workspace_id, name) values (${workspaceId}, ${name}) on conflict do nothing`
          }
          const rows = yield* tagsNamed({ workspaceId, names: unique.map((n) => n.toLowerCase()) })
          return rows.map(idOf)
        }).pipe(Effect.orDie),

      addTags: (opportunityId: OpportunityId, tagIds: ReadonlyArray<TagId>) =>
        tagIds.length === 0
          ? Effect.void
          : sql`insert into opportunity_tags ${
            sql.insert(tagIds.map((tag_id) => ({ opportunity_id: opportunityId, tag_id })))
          }
                on conflict do nothing`.pipe(Effect.asVoid, Effect.orDie),

      removeTags: (opportunityId: OpportunityId, tagIds: ReadonlyArray<TagId>) =>
        tagIds.length === 0
          ? Effect.void
          : sql`delete from opportunity_tags where opportunity_id = ${opportunityId} and tag_id in ${sql.in(tagIds)}`
            .pipe(
              Effect.asVoid,
              Effect.orDie
            ),

      /** The pipeline's channel: its lowest-id linked channel. */
      pipelineChannel: (pipelineId: PipelineId) => pipelineChannel(pipelineId).pipe(Effect.map(idOf), Effect.orDie),

      conversationOn: (contactId: ContactId, channelId: ChannelId | null) =>
        Effect.orDie(conversationOn({ contactId, channelId })),

      insertConversation: (c: typeof NewConversation.Type) => Effect.orDie(insertConversation(c)),

      linkConversation: (opportunityId: OpportunityId, conversationId: ConversationId) =>
        sql`insert into conversation_opportunity (opportunity_id, conversation_id) values (${opportunityId}, ${conversationId})
            on conflict do nothing`.pipe(Effect.asVoid, Effect.orDie),

      base: (id: OpportunityId) => Effect.orDie(base(id)),

      conversation: (workspaceIds: ReadonlyArray<WorkspaceId>, id: ConversationId) =>
        Effect.orDie(conversation({ workspaceIds, id })),

      updateConversation: (
        id: ConversationId,
        c: { status?: ConversationStatus | undefined; notes?: ReadonlyArray<string> | null | undefined }
      ) => {
        const notes = c.notes === undefined ? undefined : sql`${c.notes ?? []}::text[]`
        const set = { status: c.status, notes, updated_at: sql`now()` }
        return sql<{ id: ConversationId; status: ConversationStatus }>`${
          ConversationWrites.update(sql, set, sql`where id = ${id} returning id, status`)
        }`
          .pipe(
            Effect.map((rows) => rows[0]!),
            Effect.orDie
          )
      }
    }
  })
}) {}
