import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import {
  type ChannelId,
  Contact,
  type ContactId,
  type ConversationId,
  type ConversationStatus,
  Opportunity,
  type OpportunityId,
  type OpportunityStatus,
  type PipelineId,
  type Priority,
  type StageId,
  type TagId,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"

const decodeOpportunities = Schema.decodeUnknown(Schema.Array(Opportunity))
const decodeContacts = Schema.decodeUnknown(Schema.Array(Contact))

/** ISO 8601 UTC with microseconds inside JSON, matching the row parsers' format. */
const iso = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

export interface OpportunityFilter {
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly pipelineId?: PipelineId | undefined
  readonly stageId?: StageId | undefined
  readonly status?: string | undefined
  readonly priority?: Priority | undefined
  readonly q?: string | undefined
  readonly tagIds: ReadonlyArray<number>
  readonly tagNames: ReadonlyArray<string>
  readonly start?: Date | undefined
  readonly end?: Date | undefined
}

export interface NewOpportunity {
  readonly workspace_id: WorkspaceId
  readonly pipeline_id: PipelineId
  readonly stage_id: StageId
  readonly contact_id: ContactId
  readonly status: OpportunityStatus
  readonly name: string | null
  readonly notes: string | null
  readonly context: unknown
  readonly is_test: boolean
  readonly source: string | null
  readonly source_id: string | null
  /** an eval's sandboxed opportunity (docs/evals.md) */
  readonly is_eval?: boolean
  /** what an eval's opportunity runs (docs/versions.md): 0 the draft, else a pipeline version's id */
  readonly config_version_id?: number
}

export interface OpportunityChanges {
  readonly stage_id?: StageId | undefined
  readonly name?: string | null | undefined
  readonly notes?: string | null | undefined
  readonly status?: OpportunityStatus | undefined
  /** `null` clears; an object is merged into what is stored */
  readonly context?: Record<string, unknown> | null | undefined
}

export class OpportunitiesRepo extends Effect.Service<OpportunitiesRepo>()("@parley/server/OpportunitiesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

    const selectFull = sql.literal(`
      select o.id, o.workspace_id, o.status, o.contact_id, o.stage_id, o.pipeline_id, o.name, o.notes, o.context,
             o.is_test, o.source, o.source_id, o.created_at, o.updated_at,
             c.name as contact_name, c.custom_name as contact_custom_name, c.priority as contact_priority,
             c.identifier as contact_identifier, c.email as contact_email, c.custom_email as contact_custom_email,
             c.phone as contact_phone, c.custom_phone as contact_custom_phone,
             s.name as stage_name, s.nature as stage_nature,
             coalesce((
               select json_agg(json_build_object('id', t.id, 'name', t.name) order by t.id)
               from opportunity_tags ot join tags t on t.id = ot.tag_id
               where ot.opportunity_id = o.id), '[]') as tags,
             coalesce((
               select json_agg(json_build_object(
                 'id', cv.id, 'is_test', cv.is_test, 'last_message_at', ${iso("cv.last_message_at")},
                 'messages_count', cv.messages_count, 'cost_for_user', cv.cost_for_user::float8, 'status', cv.status,
                 'last_message_content', cv.last_message_content,
                 'avg_response_time', case when cv.responses_count > 0
                   then round((cv.response_seconds_total / cv.responses_count)::numeric, 3)::float8 else 0 end,
                 'channel_id', cv.channel_id, 'notes', to_json(cv.notes),
                 'pivot', json_build_object('opportunity_id', co.opportunity_id, 'conversation_id', co.conversation_id)
               ) order by cv.id)
               from conversation_opportunity co
               join conversations cv on cv.id = co.conversation_id
               where co.opportunity_id = o.id), '[]') as conversations
      from opportunities o
      join contacts c on c.id = o.contact_id
      join stages s on s.id = o.stage_id`)

    const full = (where: Statement.Fragment, tail: Statement.Fragment = sql``) =>
      sql`${selectFull} where ${where} ${tail}`.pipe(Effect.orDie, Effect.flatMap((rows) => Effect.orDie(decodeOpportunities(rows))))

    const inWorkspaces = (column: string, ids: ReadonlyArray<WorkspaceId>) => sql`${sql.literal(column)} in ${sql.in(ids)}`

    const like = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

    const opportunityWhere = (f: OpportunityFilter) => {
      // an eval's opportunities and contacts (docs/evals.md) are on no board or list
      const clauses: Array<Statement.Fragment> = [inWorkspaces("o.workspace_id", f.workspaceIds), sql`not o.is_eval`]
      if (f.pipelineId !== undefined) clauses.push(sql`o.pipeline_id = ${f.pipelineId}`)
      if (f.stageId !== undefined) clauses.push(sql`o.stage_id = ${f.stageId}`)
      if (f.status !== undefined) clauses.push(sql`o.status = ${f.status}`)
      if (f.priority !== undefined) clauses.push(sql`c.priority = ${f.priority}`)
      if (f.q !== undefined && f.q.trim() !== "") {
        const q = like(f.q.trim())
        clauses.push(sql`(c.name ilike ${q} or c.custom_name ilike ${q} or c.email ilike ${q} or c.phone like ${q}
                          or c.identifier ilike ${q})`)
      }
      if (f.tagIds.length > 0 || f.tagNames.length > 0) {
        const byId = f.tagIds.length > 0 ? sql`ot.tag_id in ${sql.in(f.tagIds)}` : sql`false`
        const byName = f.tagNames.length > 0 ? sql`lower(t.name) in ${sql.in(f.tagNames.map((n) => n.toLowerCase()))}` : sql`false`
        clauses.push(sql`exists (select 1 from opportunity_tags ot join tags t on t.id = ot.tag_id
                                 where ot.opportunity_id = o.id and (${byId} or ${byName}))`)
      }
      if (f.start !== undefined) clauses.push(sql`o.created_at >= ${f.start}`)
      if (f.end !== undefined) clauses.push(sql`o.created_at < ${f.end}`)
      return sql.and(clauses)
    }

    const contactWhere = (f: OpportunityFilter) => {
      const clauses: Array<Statement.Fragment> = [inWorkspaces("c.workspace_id", f.workspaceIds), sql`not c.is_eval`]
      const viaOpportunity: Array<Statement.Fragment> = []
      if (f.pipelineId !== undefined) viaOpportunity.push(sql`o.pipeline_id = ${f.pipelineId}`)
      if (f.status !== undefined) viaOpportunity.push(sql`o.status = ${f.status}`)
      if (f.tagIds.length > 0) {
        viaOpportunity.push(sql`exists (select 1 from opportunity_tags ot where ot.opportunity_id = o.id and ot.tag_id in ${sql.in(f.tagIds)})`)
      }
      if (viaOpportunity.length > 0) {
        clauses.push(sql`exists (select 1 from opportunities o where o.contact_id = c.id and ${sql.and(viaOpportunity)})`)
      }
      if (f.priority !== undefined) clauses.push(sql`c.priority = ${f.priority}`)
      if (f.q !== undefined && f.q.trim() !== "") {
        const q = like(f.q.trim())
        clauses.push(sql`(c.name ilike ${q} or c.custom_name ilike ${q} or c.email ilike ${q} or c.phone like ${q}
                          or c.identifier ilike ${q})`)
      }
      if (f.start !== undefined) clauses.push(sql`c.created_at >= ${f.start}`)
      if (f.end !== undefined) clauses.push(sql`c.created_at < ${f.end}`)
      return sql.and(clauses)
    }

    return {
      full,

      byId: (workspaceIds: ReadonlyArray<WorkspaceId>, id: OpportunityId) =>
        full(sql`o.id = ${id} and ${inWorkspaces("o.workspace_id", workspaceIds)}`).pipe(Effect.map(first)),

      /** Whoever owns it: the caller tells 403 (someone else's) from 404 (none) and never returns a foreign row. */
      byIdInAnyWorkspace: (id: OpportunityId) => full(sql`o.id = ${id}`).pipe(Effect.map(first)),

      /** The newest opportunity of the contact with that phone (in the pipeline, when given). */
      newestByPhone: (workspaceIds: ReadonlyArray<WorkspaceId>, phone: string, pipelineId: PipelineId | undefined) =>
        full(
          sql`c.phone = ${phone} and ${inWorkspaces("o.workspace_id", workspaceIds)}
              ${pipelineId === undefined ? sql`` : sql`and o.pipeline_id = ${pipelineId}`}`,
          sql`order by o.created_at desc, o.id desc limit 1`
        ).pipe(Effect.map(first)),

      ofContact: (workspaceIds: ReadonlyArray<WorkspaceId>, contact: { id?: ContactId; phone?: string }, pipelineId: PipelineId | undefined) =>
        full(
          sql`${contact.id !== undefined ? sql`o.contact_id = ${contact.id}` : sql`c.phone = ${contact.phone!}`}
              and ${inWorkspaces("o.workspace_id", workspaceIds)}
              ${pipelineId === undefined ? sql`` : sql`and o.pipeline_id = ${pipelineId}`}`,
          sql`order by o.created_at desc, o.id desc`
        ),

      list: (f: OpportunityFilter, page: number, perPage: number) =>
        Effect.all([
          full(opportunityWhere(f), sql`order by o.created_at desc, o.id desc limit ${perPage} offset ${(page - 1) * perPage}`),
          sql<{ n: number }>`select count(*)::int as n from opportunities o join contacts c on c.id = o.contact_id
                             where ${opportunityWhere(f)}`.pipe(Effect.map((r) => r[0]!.n), Effect.orDie)
        ]),

      listContacts: (f: OpportunityFilter, page: number, perPage: number) =>
        Effect.all([
          sql`select c.id, c.workspace_id, c.name, c.email, c.phone, c.identifier, c.priority, c.custom_name, c.custom_email,
                     c.custom_phone, (select count(*)::int from opportunities o where o.contact_id = c.id) as opportunities_count,
                     c.created_at, c.updated_at
              from contacts c where ${contactWhere(f)}
              order by c.created_at desc, c.id desc limit ${perPage} offset ${(page - 1) * perPage}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) => Effect.orDie(decodeContacts(rows)))
          ),
          sql<{ n: number }>`select count(*)::int as n from contacts c where ${contactWhere(f)}`.pipe(
            Effect.map((r) => r[0]!.n),
            Effect.orDie
          )
        ]),

      pipeline: (workspaceIds: ReadonlyArray<WorkspaceId>, id: PipelineId) =>
        sql<{ id: PipelineId; workspace_id: WorkspaceId }>`
          select id, workspace_id from pipelines where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`
          .pipe(Effect.map(first), Effect.orDie),

      stage: (workspaceIds: ReadonlyArray<WorkspaceId>, id: StageId) =>
        sql<{ id: StageId; pipeline_id: PipelineId }>`
          select id, pipeline_id from stages where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`
          .pipe(Effect.map(first), Effect.orDie),

      firstStage: (pipelineId: PipelineId) =>
        sql<{ id: StageId }>`select id from stages where pipeline_id = ${pipelineId} order by sort_order, id limit 1`.pipe(
          Effect.map((rows) => Option.map(first(rows), (r) => r.id)),
          Effect.orDie
        ),

      /** A contact of the workspace that already has an opportunity in one of the caller's pipelines (SPEC.md 4.1 rule 1). */
      contactWithOpportunity: (workspaceIds: ReadonlyArray<WorkspaceId>, workspaceId: WorkspaceId, id: ContactId) =>
        sql<{ id: ContactId }>`
          select c.id from contacts c
          where c.id = ${id} and c.workspace_id = ${workspaceId}
            and exists (select 1 from opportunities o where o.contact_id = c.id and ${inWorkspaces("o.workspace_id", workspaceIds)})`
          .pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),

      contactsIn: (workspaceIds: ReadonlyArray<WorkspaceId>, id: ContactId) =>
        sql`select 1 from contacts where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),

      contactByPhone: (workspaceId: WorkspaceId, phone: string) =>
        sql<{ id: ContactId }>`select id from contacts where workspace_id = ${workspaceId} and phone = ${phone}`.pipe(
          Effect.map((rows) => Option.map(first(rows), (r) => r.id)),
          Effect.orDie
        ),

      contactByEmail: (workspaceId: WorkspaceId, email: string) =>
        sql<{ id: ContactId }>`select id from contacts where workspace_id = ${workspaceId} and lower(email) = lower(${email})`.pipe(
          Effect.map((rows) => Option.map(first(rows), (r) => r.id)),
          Effect.orDie
        ),

      /** Inserts unless phone or email is taken meanwhile (a concurrent create): then nothing is returned. */
      insertContact: (c: {
        workspace_id: WorkspaceId
        name: string | null
        email: string | null
        phone: string | null
        priority: Priority
        is_eval?: boolean
      }) =>
        sql<{ id: ContactId }>`
          insert into contacts (workspace_id, name, email, phone, priority, is_eval)
          values (${c.workspace_id}, ${c.name}, ${c.email}, ${c.phone}, ${c.priority}, ${c.is_eval ?? false})
          on conflict do nothing returning id`.pipe(Effect.map((rows) => Option.map(first(rows), (r) => r.id)), Effect.orDie),

      /** Serialises creates for one contact so "return the current opportunity" cannot race. */
      lockContact: (id: ContactId) => sql`select id from contacts where id = ${id} for update`.pipe(Effect.asVoid, Effect.orDie),

      /** Fills identity fields the contact does not have yet; never overwrites, never takes another contact's phone or email. */
      fillContact: (id: ContactId, workspaceId: WorkspaceId, c: { name: string | null; email: string | null; phone: string | null }) =>
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

      updateContactOverrides: (id: ContactId, o: { custom_name?: string | null; custom_email?: string | null; custom_phone?: string | null; priority?: Priority }) => {
        const set: Array<Statement.Fragment> = []
        if (o.custom_name !== undefined) set.push(sql`custom_name = ${o.custom_name}`)
        if (o.custom_email !== undefined) set.push(sql`custom_email = ${o.custom_email}`)
        if (o.custom_phone !== undefined) set.push(sql`custom_phone = ${o.custom_phone}`)
        if (o.priority !== undefined) set.push(sql`priority = ${o.priority}`)
        return set.length === 0
          ? Effect.void
          : sql`update contacts set ${sql.csv([...set, sql`updated_at = now()`])} where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
      },

      newestOpportunityOf: (contactId: ContactId, pipelineId: PipelineId) =>
        sql<{ id: OpportunityId }>`
          select id from opportunities where contact_id = ${contactId} and pipeline_id = ${pipelineId}
          order by created_at desc, id desc limit 1`.pipe(Effect.map((rows) => Option.map(first(rows), (r) => r.id)), Effect.orDie),

      insertOpportunity: (o: NewOpportunity) =>
        sql<{ id: OpportunityId }>`
          insert into opportunities (workspace_id, pipeline_id, stage_id, contact_id, status, name, notes, context, is_test, source, source_id,
                                     is_eval, config_version_id)
          values (${o.workspace_id}, ${o.pipeline_id}, ${o.stage_id}, ${o.contact_id}, ${o.status}, ${o.name}, ${o.notes},
                  ${o.context === null ? null : JSON.stringify(o.context)}::jsonb, ${o.is_test}, ${o.source}, ${o.source_id}, ${o.is_eval ?? false},
                  ${o.config_version_id ?? null})
          returning id`.pipe(Effect.map((rows) => rows[0]!.id), Effect.orDie),

      updateOpportunity: (id: OpportunityId, c: OpportunityChanges) => {
        const set: Array<Statement.Fragment> = []
        if (c.stage_id !== undefined) set.push(sql`stage_id = ${c.stage_id}`)
        if (c.name !== undefined) set.push(sql`name = ${c.name}`)
        if (c.notes !== undefined) set.push(sql`notes = ${c.notes}`)
        if (c.status !== undefined) set.push(sql`status = ${c.status}`)
        if (c.context === null) set.push(sql`context = null`)
        else if (c.context !== undefined) set.push(sql`context = coalesce(context, '{}'::jsonb) || ${JSON.stringify(c.context)}::jsonb`)
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
        sql`update stage_entries set consumed_at = now() where id = ${entryId} and consumed_at is null returning id`.pipe(
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
          const rows = yield* sql<{ id: TagId }>`
            select id from tags where workspace_id = ${workspaceId} and lower(name) in ${sql.in(unique.map((n) => n.toLowerCase()))}`
          return rows.map((r) => r.id)
        }).pipe(Effect.orDie),

      addTags: (opportunityId: OpportunityId, tagIds: ReadonlyArray<TagId>) =>
        tagIds.length === 0
          ? Effect.void
          : sql`insert into opportunity_tags ${sql.insert(tagIds.map((tag_id) => ({ opportunity_id: opportunityId, tag_id })))}
                on conflict do nothing`.pipe(Effect.asVoid, Effect.orDie),

      removeTags: (opportunityId: OpportunityId, tagIds: ReadonlyArray<TagId>) =>
        tagIds.length === 0
          ? Effect.void
          : sql`delete from opportunity_tags where opportunity_id = ${opportunityId} and tag_id in ${sql.in(tagIds)}`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),

      /** The pipeline's channel: its lowest-id linked channel. */
      pipelineChannel: (pipelineId: PipelineId) =>
        sql<{ id: ChannelId }>`select min(id) as id from channels where pipeline_id = ${pipelineId}`.pipe(
          Effect.map((rows) => rows[0]?.id ?? null),
          Effect.orDie
        ),

      conversationOn: (contactId: ContactId, channelId: ChannelId | null) =>
        sql<{ id: ConversationId; status: ConversationStatus }>`
          select id, status from conversations
          where contact_id = ${contactId} and channel_id is not distinct from ${channelId}
          order by id limit 1`.pipe(Effect.map(first), Effect.orDie),

      insertConversation: (c: { workspace_id: WorkspaceId; contact_id: ContactId; channel_id: ChannelId | null; is_test: boolean; is_eval?: boolean }) =>
        sql<{ id: ConversationId; status: ConversationStatus }>`
          insert into conversations (workspace_id, contact_id, channel_id, is_test, is_eval)
          values (${c.workspace_id}, ${c.contact_id}, ${c.channel_id}, ${c.is_test}, ${c.is_eval ?? false}) returning id, status`.pipe(
          Effect.map((rows) => rows[0]!),
          Effect.orDie
        ),

      linkConversation: (opportunityId: OpportunityId, conversationId: ConversationId) =>
        sql`insert into conversation_opportunity (opportunity_id, conversation_id) values (${opportunityId}, ${conversationId})
            on conflict do nothing`.pipe(Effect.asVoid, Effect.orDie),

      base: (id: OpportunityId) =>
        sql<Record<string, unknown>>`
          select id, workspace_id, status, contact_id, stage_id, pipeline_id, name, notes, context, is_test, source, source_id,
                 created_at, updated_at
          from opportunities where id = ${id}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie),

      conversation: (workspaceIds: ReadonlyArray<WorkspaceId>, id: ConversationId) =>
        sql<{ id: ConversationId; status: ConversationStatus }>`
          select id, status from conversations where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`.pipe(
          Effect.map(first),
          Effect.orDie
        ),

      updateConversation: (id: ConversationId, c: { status?: ConversationStatus | undefined; notes?: ReadonlyArray<string> | null | undefined }) => {
        const set: Array<Statement.Fragment> = []
        if (c.status !== undefined) set.push(sql`status = ${c.status}`)
        if (c.notes !== undefined) set.push(sql`notes = ${c.notes ?? []}::text[]`)
        return sql<{ id: ConversationId; status: ConversationStatus }>`
          update conversations set ${sql.csv([...set, sql`updated_at = now()`])} where id = ${id} returning id, status`.pipe(
          Effect.map((rows) => rows[0]!),
          Effect.orDie
        )
      }
    }
  })
}) {}
