/**
 * Contacts, opportunities and messages (SPEC.md 4.5): `opportunities:read` to read, `opportunities:write` to
 * change, as on REST.
 */
import {
  ContactId,
  decodeMessagesCursor,
  IsoDate,
  ListContactsQuery,
  ListOpportunitiesQuery,
  OpportunityId,
  type Page,
  parseIsoDate,
  PipelineId,
  StageId,
  TagId,
  Unprocessable,
  UpdateOpportunity
} from "@parley/domain"
import { IntBetween } from "@parley/domain/Schemas"
import { Effect, Schema, Struct } from "effect"
import { McpBackend } from "../Backend.js"
import { integer, nextPage, nullable, objects, paged, result, string } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, paging, required, withDefault } from "../ToolFields.js"

/** A bare end date covers that whole day (UTC), as on the REST list endpoints. */
const endBound = (value: string | undefined) => {
  const parsed = value === undefined ? undefined : parseIsoDate(value)
  if (parsed === undefined) return {}
  return parsed.dateOnly
    ? { end: new Date(parsed.date.getTime() + 86_400_000), endExclusive: true }
    : { end: parsed.date, endExclusive: false }
}

const pageResult = <A>(key: string, page: Page<A>, args: Record<string, unknown>) => {
  const more = page.current_page < page.last_page
  return {
    [key]: page.data,
    page: page.current_page,
    per_page: page.per_page,
    last_page: page.last_page,
    total: page.total,
    has_more: more,
    next_page: nextPage(args, more, { page: page.current_page + 1 })
  }
}

/** REST's query takes tag ids as text. */
const withTagIds = <A extends { readonly tag_ids?: ReadonlyArray<number> | undefined }>({ tag_ids, ...rest }: A) => ({
  ...rest,
  ...(tag_ids === undefined ? {} : { tag_ids: tag_ids.map(String) })
})

const pageFields = { page: integer, per_page: integer, last_page: integer, total: integer, ...paged }

const filters = {
  tag_ids: optional(Schema.Array(TagId), "Tag ids; any of them matches"),
  start_date: optional(IsoDate, "Created on or after, ISO 8601"),
  end_date: optional(IsoDate, "Created on or before, ISO 8601; a bare date includes that day"),
  ...paging(25)
}

export const opportunityTools: ReadonlyArray<Tool> = [
  tool({
    name: "list_contacts",
    title: "List contacts",
    group: "discover",
    scope: "opportunities:read",
    description: "Contacts, newest first, one row each, filtered by their opportunities.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Contacts with an opportunity in this pipeline"),
      status: optional(ListContactsQuery.fields.status.from, "Status of one of their opportunities"),
      priority: optional(ListContactsQuery.fields.priority.from, "The contact's priority"),
      q: optional(ListContactsQuery.fields.q.from, "Part of the name, email, phone or identifier"),
      ...filters
    }),
    output: result({ contacts: objects, ...pageFields }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listContacts(withTagIds(args))).pipe(
        Effect.map((page) => pageResult("contacts", page, args))
      )
  }),
  tool({
    name: "list_opportunities",
    title: "List opportunities",
    group: "discover",
    scope: "opportunities:read",
    description:
      "Opportunities (leads, deals), newest first, with contact, stage, tags and conversations. Filters combine.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Only this pipeline"),
      stage_id: optional(StageId, "Only this stage"),
      status: optional(ListOpportunitiesQuery.fields.status.from, "Only this status"),
      priority: optional(ListOpportunitiesQuery.fields.priority.from, "Only contacts of this priority"),
      q: optional(
        ListOpportunitiesQuery.fields.q.from,
        "Part of the contact's name, email, phone, identifier or custom name"
      ),
      tags: optional(Schema.Array(Schema.String), "Tag names, any case; any of them matches"),
      ...filters
    }),
    output: result({ opportunities: objects, ...pageFields }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listOpportunities(withTagIds(args))).pipe(
        Effect.map((page) => pageResult("opportunities", page, args))
      )
  }),
  tool({
    name: "list_messages",
    title: "List messages",
    group: "discover",
    scope: "opportunities:read",
    description: "Messages with contacts, newest first. A contact message left unanswered says why in no_reply_reason.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Only this pipeline's messages"),
      contact_id: optional(ContactId, "Only messages with this contact"),
      role: optional(
        Schema.Literal("user", "assistant"),
        "user: from the contact; assistant: from the AI or an operator"
      ),
      start_date: optional(IsoDate, "Sent on or after, ISO 8601"),
      end_date: optional(IsoDate, "Sent on or before, ISO 8601; a bare date includes that day"),
      cursor: optional(Schema.String, "next_cursor of the previous page; omit for the first"),
      limit: withDefault(IntBetween(1, 500), 100, "Messages per page")
    }),
    output: result({ messages: objects, next_cursor: nullable(string), ...paged }),
    run: (args) =>
      Effect.gen(function*() {
        const cursor = args.cursor === undefined ? undefined : decodeMessagesCursor(args.cursor)
        if (args.cursor !== undefined && cursor === undefined) {
          return yield* Unprocessable.of([{
            field: "cursor",
            message: "The cursor is not a next_cursor of a previous call."
          }])
        }
        const page = yield* (yield* McpBackend).listMessages({
          pipelineId: args.pipeline_id,
          contactId: args.contact_id,
          role: args.role,
          start: args.start_date === undefined ? undefined : parseIsoDate(args.start_date)?.date,
          ...endBound(args.end_date),
          cursor,
          limit: args.limit
        })
        const more = page.next_cursor !== null
        return { ...page, has_more: more, next_page: nextPage(args, more, { cursor: page.next_cursor }) }
      })
  }),
  tool({
    name: "update_opportunities",
    title: "Update opportunities",
    group: "update",
    scope: "opportunities:write",
    openWorld: true,
    description:
      "Changes opportunities one by one (entering a stage runs its actions: webhooks may fire); answers the updated and the failed.",
    input: Schema.Struct({
      ids: required(
        Schema.Array(OpportunityId).pipe(Schema.minItems(1), Schema.maxItems(100)),
        "Opportunity ids to change"
      ),
      ...Struct.pick(UpdateOpportunity.fields, "status", "stage_id", "notes"),
      tags: optional(UpdateOpportunity.fields.tags.from, "Tag names to add"),
      deleted_tags: optional(UpdateOpportunity.fields.deleted_tags.from, "Tag ids to remove")
    }),
    output: result({ updated: objects, failed: objects }),
    run: ({ ids, ...input }) =>
      Effect.gen(function*() {
        const b = yield* McpBackend
        const outcomes = yield* Effect.forEach(ids, (id) => Effect.either(b.updateOpportunity(id, input)))
        const updated = outcomes.flatMap((o) => (o._tag === "Right" ? [o.right] : []))
        const failed = outcomes.flatMap((o, i) =>
          o._tag === "Left"
            ? [{
              id: ids[i]!,
              message: o.left.message,
              ...(o.left._tag === "Unprocessable" ? { validation: o.left.validation } : {})
            }]
            : []
        )
        // nothing changed: the one error as it is, or every id's error
        const only = outcomes.length === 1 ? outcomes[0] : undefined
        if (only?._tag === "Left") return yield* only.left
        if (updated.length === 0) {
          return yield* Unprocessable.of(failed.map((f) => ({ field: `ids.${ids.indexOf(f.id)}`, message: f.message })))
        }
        return { updated, failed }
      })
  })
]
