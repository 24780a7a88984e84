import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import {
  Contact,
  type ContactId,
  Opportunity,
  type OpportunityId,
  PipelineId,
  Priority,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Schema } from "effect"

/** ISO 8601 UTC with microseconds inside JSON, matching the row parsers' format. */
const iso = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

const WorkspaceIds = Schema.Array(WorkspaceId)

/** What a list of opportunities, or of contacts, is narrowed to. */
export const OpportunityFilter = Schema.Struct({
  workspaceIds: WorkspaceIds,
  pipelineId: Schema.optional(PipelineId),
  stageId: Schema.optional(StageId),
  status: Schema.optional(Schema.String),
  priority: Schema.optional(Priority),
  q: Schema.optional(Schema.String),
  tagIds: Schema.Array(Schema.Number),
  tagNames: Schema.Array(Schema.String),
  start: Schema.optional(Schema.DateFromSelf),
  end: Schema.optional(Schema.DateFromSelf)
})
export type OpportunityFilter = typeof OpportunityFilter.Type

const Page = Schema.Struct({ filter: OpportunityFilter, limit: Schema.Number, offset: Schema.Number })
const Count = Schema.Struct({ n: Schema.Number })

/**
 * The opportunity as clients see it (with its contact, stage, tags and conversations) and the lists of
 * opportunities and contacts: reads only, each one statement. Writes are OpportunitiesRepo's.
 */
export class OpportunityReads extends Effect.Service<OpportunityReads>()("@parley/server/OpportunityReads", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

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
      sql`${selectFull} where ${where} ${tail}`

    const inWorkspaces = (column: string, ids: ReadonlyArray<number>) => sql`${sql.literal(column)} in ${sql.in(ids)}`

    const like = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

    const opportunityWhere = (f: typeof OpportunityFilter.Encoded) => {
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
        const byName = f.tagNames.length > 0
          ? sql`lower(t.name) in ${sql.in(f.tagNames.map((n) => n.toLowerCase()))}`
          : sql`false`
        clauses.push(sql`exists (select 1 from opportunity_tags ot join tags t on t.id = ot.tag_id
                                 where ot.opportunity_id = o.id and (${byId} or ${byName}))`)
      }
      if (f.start !== undefined) clauses.push(sql`o.created_at >= ${f.start}`)
      if (f.end !== undefined) clauses.push(sql`o.created_at < ${f.end}`)
      return sql.and(clauses)
    }

    const contactWhere = (f: typeof OpportunityFilter.Encoded) => {
      const clauses: Array<Statement.Fragment> = [inWorkspaces("c.workspace_id", f.workspaceIds), sql`not c.is_eval`]
      const viaOpportunity: Array<Statement.Fragment> = []
      if (f.pipelineId !== undefined) viaOpportunity.push(sql`o.pipeline_id = ${f.pipelineId}`)
      if (f.status !== undefined) viaOpportunity.push(sql`o.status = ${f.status}`)
      if (f.tagIds.length > 0) {
        viaOpportunity.push(
          sql`exists (select 1 from opportunity_tags ot where ot.opportunity_id = o.id and ot.tag_id in ${
            sql.in(f.tagIds)
          })`
        )
      }
      if (viaOpportunity.length > 0) {
        clauses.push(
          sql`exists (select 1 from opportunities o where o.contact_id = c.id and ${sql.and(viaOpportunity)})`
        )
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

    // ids as numbers, not branded: an identifier's digits (even 0) are looked up, not refused
    const byId = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceIds: WorkspaceIds, id: Schema.Number }),
      Result: Opportunity,
      execute: ({ id, workspaceIds }) => full(sql`o.id = ${id} and ${inWorkspaces("o.workspace_id", workspaceIds)}`)
    })

    const byIdInAnyWorkspace = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Opportunity,
      execute: (id) => full(sql`o.id = ${id}`)
    })

    const newestByPhone = SqlSchema.findOne({
      Request: Schema.Struct({
        workspaceIds: WorkspaceIds,
        phone: Schema.String,
        pipelineId: Schema.optional(PipelineId)
      }),
      Result: Opportunity,
      execute: ({ phone, pipelineId, workspaceIds }) =>
        full(
          sql`c.phone = ${phone} and ${inWorkspaces("o.workspace_id", workspaceIds)}
              ${pipelineId === undefined ? sql`` : sql`and o.pipeline_id = ${pipelineId}`}`,
          sql`order by o.created_at desc, o.id desc limit 1`
        )
    })

    const ofContact = SqlSchema.findAll({
      Request: Schema.Struct({
        workspaceIds: WorkspaceIds,
        contactId: Schema.optional(Schema.Number),
        phone: Schema.optional(Schema.String),
        pipelineId: Schema.optional(PipelineId)
      }),
      Result: Opportunity,
      execute: ({ contactId, phone, pipelineId, workspaceIds }) =>
        full(
          sql`${contactId !== undefined ? sql`o.contact_id = ${contactId}` : sql`c.phone = ${phone!}`}
              and ${inWorkspaces("o.workspace_id", workspaceIds)}
              ${pipelineId === undefined ? sql`` : sql`and o.pipeline_id = ${pipelineId}`}`,
          sql`order by o.created_at desc, o.id desc`
        )
    })

    const opportunities = SqlSchema.findAll({
      Request: Page,
      Result: Opportunity,
      execute: ({ filter, limit, offset }) =>
        full(opportunityWhere(filter), sql`order by o.created_at desc, o.id desc limit ${limit} offset ${offset}`)
    })

    const opportunityCount = SqlSchema.single({
      Request: OpportunityFilter,
      Result: Count,
      execute: (f) =>
        sql`select count(*)::int as n from opportunities o join contacts c on c.id = o.contact_id
                             where ${opportunityWhere(f)}`
    })

    const contacts = SqlSchema.findAll({
      Request: Page,
      Result: Contact,
      execute: ({ filter, limit, offset }) =>
        sql`select c.id, c.workspace_id, c.name, c.email, c.phone, c.identifier, c.priority, c.custom_name, c.custom_email,
                     c.custom_phone, (select count(*)::int from opportunities o where o.contact_id = c.id) as opportunities_count,
                     c.created_at, c.updated_at
              from contacts c where ${contactWhere(filter)}
              order by c.created_at desc, c.id desc limit ${limit} offset ${offset}`
    })

    const contactCount = SqlSchema.single({
      Request: OpportunityFilter,
      Result: Count,
      execute: (f) => sql`select count(*)::int as n from contacts c where ${contactWhere(f)}`
    })

    const pageOf = (filter: OpportunityFilter, page: number, perPage: number) => ({
      filter,
      limit: perPage,
      offset: (page - 1) * perPage
    })

    return {
      byId: (workspaceIds: ReadonlyArray<WorkspaceId>, id: OpportunityId) => Effect.orDie(byId({ workspaceIds, id })),

      /** Whoever owns it: the caller tells 403 (someone else's) from 404 (none) and never returns a foreign row. */
      byIdInAnyWorkspace: (id: OpportunityId) => Effect.orDie(byIdInAnyWorkspace(id)),

      /** The newest opportunity of the contact with that phone (in the pipeline, when given). */
      newestByPhone: (workspaceIds: ReadonlyArray<WorkspaceId>, phone: string, pipelineId: PipelineId | undefined) =>
        Effect.orDie(newestByPhone({ workspaceIds, phone, pipelineId })),

      ofContact: (
        workspaceIds: ReadonlyArray<WorkspaceId>,
        contact: { id?: ContactId; phone?: string },
        pipelineId: PipelineId | undefined
      ) => Effect.orDie(ofContact({ workspaceIds, contactId: contact.id, phone: contact.phone, pipelineId })),

      list: (f: OpportunityFilter, page: number, perPage: number) =>
        Effect.orDie(
          Effect.all([opportunities(pageOf(f, page, perPage)), Effect.map(opportunityCount(f), (r) => r.n)])
        ),

      listContacts: (f: OpportunityFilter, page: number, perPage: number) =>
        Effect.orDie(Effect.all([contacts(pageOf(f, page, perPage)), Effect.map(contactCount(f), (r) => r.n)]))
    }
  })
}) {}
