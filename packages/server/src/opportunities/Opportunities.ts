import { SqlClient } from "@effect/sql"
import {
  type Actor,
  BadRequest,
  ContactId,
  type ConversationId,
  ConversationNotFound,
  type CreateOpportunity,
  CurrentActor,
  Forbidden,
  isAllDigits,
  type ListContactsQuery,
  type ListOpportunitiesQuery,
  manyValues,
  normalisePhone,
  type Opportunity,
  OpportunityId,
  OpportunityNotFound,
  OpportunityOnContact,
  type PipelineId,
  RequestUrl,
  toPage,
  Unprocessable,
  type UpdateConversation,
  type UpdateOpportunity,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import type { LazyArg } from "effect/Function"
import { someOrFail } from "../util/Effects.js"
import { OpportunitiesRepo } from "./OpportunitiesRepo.js"
import { type OpportunityFilter, OpportunityReads } from "./OpportunityReads.js"

const createAStageFirst = new BadRequest({ message: "Create a stage first" })
const notYours = new Forbidden({ message: "This action is unauthorized." })

/** Ids beyond 2^53 cannot be ours; such digits can only be a phone. */
const asId = <A>(id: Schema.Schema<A, number>, identifier: string): Option.Option<A> =>
  isAllDigits(identifier) && identifier.length <= 15 ? Schema.decodeOption(id)(Number(identifier)) : Option.none()

/** `2026-11-21` covers that whole day as an end date; a full timestamp is taken as it is. */
const dateBound = (value: string | undefined, end: boolean) => {
  if (value === undefined) return undefined
  const date = new Date(value)
  return end && /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(date.getTime() + 86_400_000) : date
}

/** Opportunities, their contacts and tags, and conversation updates (SPEC.md 3.1, 3.2, 4.1, 4.2). */
export class Opportunities extends Effect.Service<Opportunities>()("@parley/server/Opportunities", {
  dependencies: [OpportunitiesRepo.Default, OpportunityReads.Default],
  effect: Effect.gen(function*() {
    const repo = yield* OpportunitiesRepo
    const reads = yield* OpportunityReads
    const sql = yield* SqlClient.SqlClient

    const fullById = (actor: Actor, id: OpportunityId) =>
      reads.byId(actor.workspaceIds, id).pipe(Effect.flatMap(Option.match({
        onNone: () => Effect.die(`opportunity ${id} vanished`),
        onSome: Effect.succeed
      })))

    /** Given, or the first stage by order; a stage of another pipeline, or none at all, is `Create a stage first`. */
    const resolveStage = (actor: Actor, pipelineId: PipelineId, stageId: number | undefined) =>
      Effect.gen(function*() {
        if (stageId === undefined) return yield* repo.firstStage(pipelineId).pipe(someOrFail(() => createAStageFirst))
        const stage = yield* repo.stage(actor.workspaceIds, stageId as never).pipe(
          someOrFail(() => Unprocessable.of([{ field: "stage_id", message: "The selected stage id is invalid." }]))
        )
        if (stage.pipeline_id !== pipelineId) return yield* createAStageFirst
        return stage.id
      })

    /** SPEC.md 4.1 rule 2: matched on phone, then email, or created. Concurrent creates meet on the unique indexes. */
    const resolveContact = (workspaceId: WorkspaceId, contact: NonNullable<CreateOpportunity["contact"]>) =>
      Effect.gen(function*() {
        const phone = contact.phone ?? null
        // kept as sent; matched case-insensitively (and unique so) by the index on lower(email)
        const email = contact.email?.trim() ?? null
        const match = () =>
          Effect.gen(function*() {
            const byPhone = phone ? yield* repo.contactByPhone(workspaceId, phone) : Option.none<ContactId>()
            return Option.isSome(byPhone) || !email ? byPhone : yield* repo.contactByEmail(workspaceId, email)
          })
        const found = yield* match()
        if (Option.isSome(found)) {
          yield* repo.fillContact(found.value, workspaceId, { name: contact.name ?? null, email, phone })
          return found.value
        }
        const inserted = yield* repo.insertContact({
          workspace_id: workspaceId,
          name: contact.name ?? null,
          email,
          phone,
          priority: contact.priority ?? "medium"
        })
        if (Option.isSome(inserted)) return inserted.value
        // someone created it between our look and our insert: theirs is ours
        return yield* match().pipe(Effect.map(Option.getOrThrow))
      })

    const takenIdentity = (workspaceId: WorkspaceId, contact: NonNullable<CreateOpportunity["contact"]>) =>
      Effect.gen(function*() {
        const taken: Array<{ field: string; message: string }> = []
        if (contact.email && Option.isSome(yield* repo.contactByEmail(workspaceId, contact.email.trim()))) {
          taken.push({ field: "contact.email", message: "The contact.email has already been taken." })
        }
        if (contact.phone && Option.isSome(yield* repo.contactByPhone(workspaceId, contact.phone))) {
          taken.push({ field: "contact.phone", message: "The contact.phone has already been taken." })
        }
        return taken
      })

    const create = Effect.fn("Opportunities.create")(function*(input: CreateOpportunity) {
      const actor = yield* CurrentActor
      const pipeline = yield* repo.pipeline(actor.workspaceIds, input.pipeline_id).pipe(
        someOrFail(() => Unprocessable.of([{ field: "pipeline_id", message: "The selected pipeline id is invalid." }]))
      )
      const stageId = yield* resolveStage(actor, pipeline.id, input.stage_id)
      const fields = {
        workspace_id: pipeline.workspace_id,
        pipeline_id: pipeline.id,
        stage_id: stageId,
        status: input.status ?? "active",
        name: input.name ?? null,
        notes: input.notes ?? null,
        context: input.context ?? null,
        is_test: input.is_test ?? false,
        source: null,
        source_id: null
      } as const
      const insert = (contactId: ContactId) =>
        Effect.gen(function*() {
          const id = yield* repo.insertOpportunity({ ...fields, contact_id: contactId })
          yield* repo.addTags(id, yield* repo.ensureTags(pipeline.workspace_id, input.tags ?? []))
          yield* repo.recordStageEntry({
            workspace_id: pipeline.workspace_id,
            opportunity_id: id,
            pipeline_id: pipeline.id,
            stage_id: stageId,
            previous_stage_id: null,
            cause: "created"
          })
          return id
        })

      if (input.contact_id !== undefined) {
        // rule 1 and 3: always a new opportunity on that contact, joining its conversation on the pipeline's channel
        const contactId = input.contact_id
        if (!(yield* repo.contactWithOpportunity(actor.workspaceIds, pipeline.workspace_id, contactId))) {
          return yield* Unprocessable.of([{ field: "contact_id", message: "The selected contact id is invalid." }])
        }
        const { id, conversation } = yield* sql.withTransaction(Effect.gen(function*() {
          // one at a time per contact, so concurrent creates find (not both open) the channel's conversation
          yield* repo.lockContact(contactId)
          const id = yield* insert(contactId)
          const channelId = yield* repo.pipelineChannel(pipeline.id)
          const existing = yield* repo.conversationOn(contactId, channelId)
          const conversation = Option.isSome(existing)
            ? existing.value
            : yield* repo.insertConversation({
              workspace_id: pipeline.workspace_id,
              contact_id: contactId,
              channel_id: channelId,
              is_test: fields.is_test
            })
          yield* repo.linkConversation(id, conversation.id)
          return { id, conversation }
        })).pipe(Effect.orDie)
        const base = yield* repo.base(id)
        return new OpportunityOnContact({
          ...base,
          conversation: { id: conversation.id, contact_id: contactId, status: conversation.status }
        })
      }

      const contact = input.contact!
      const id = yield* sql.withTransaction(Effect.gen(function*() {
        if (input.is_test === true) {
          // SPEC.md 4.1: a test opportunity needs a contact nobody has yet; the unique indexes settle a race
          const taken = yield* takenIdentity(pipeline.workspace_id, contact)
          if (taken.length > 0) return yield* Unprocessable.of(taken)
          const created = yield* repo.insertContact({
            workspace_id: pipeline.workspace_id,
            name: contact.name ?? null,
            email: contact.email?.trim() ?? null,
            phone: contact.phone ?? null,
            priority: contact.priority ?? "medium"
          })
          if (Option.isNone(created)) {
            return yield* Unprocessable.of(yield* takenIdentity(pipeline.workspace_id, contact))
          }
          return yield* insert(created.value)
        }
        const contactId = yield* resolveContact(pipeline.workspace_id, contact)
        yield* repo.lockContact(contactId)
        const current = yield* repo.newestOpportunityOf(contactId, pipeline.id)
        return Option.isSome(current) ? current.value : yield* insert(contactId)
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      return yield* fullById(actor, id)
    })

    /** SPEC.md 4.1: an all-digit identifier is an opportunity id first, then a phone; the first match wins. */
    const lookup = (
      actor: Actor,
      identifier: string,
      pipelineId: PipelineId | undefined,
      foreign: LazyArg<Forbidden | OpportunityNotFound>
    ) =>
      Effect.gen(function*() {
        const id = asId(OpportunityId, identifier)
        if (Option.isSome(id)) {
          const found = yield* reads.byIdInAnyWorkspace(id.value)
          if (Option.isSome(found)) {
            if (!actor.workspaceIds.includes(found.value.workspace_id)) return yield* Effect.fail(foreign())
            return found.value
          }
        }
        const phone = normalisePhone(identifier)
        if (phone === undefined) return yield* new OpportunityNotFound()
        return yield* reads.newestByPhone(actor.workspaceIds, phone, pipelineId).pipe(
          someOrFail(() => new OpportunityNotFound())
        )
      })

    const get = Effect.fn("Opportunities.get")(function*(identifier: string, pipelineId: PipelineId | undefined) {
      return yield* lookup(yield* CurrentActor, identifier, pipelineId, () => notYours)
    })

    const update = Effect.fn("Opportunities.update")(function*(
      identifier: string,
      pipelineId: PipelineId | undefined,
      input: UpdateOpportunity
    ) {
      const actor = yield* CurrentActor
      // SPEC.md 4.1: another workspace's opportunity is "not found in workspace" here
      const current = yield* lookup(actor, identifier, pipelineId, () => new OpportunityNotFound())
      if (input.stage_id !== undefined) {
        const stage = yield* repo.stage(actor.workspaceIds, input.stage_id)
        if (Option.isNone(stage) || stage.value.pipeline_id !== current.pipeline_id) {
          return yield* Unprocessable.of([{ field: "stage_id", message: "The selected stage id is invalid." }])
        }
      }
      const moved = input.stage_id !== undefined && input.stage_id !== current.stage_id
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.updateOpportunity(current.id, input)
        if (moved) {
          yield* repo.recordStageEntry({
            workspace_id: current.workspace_id,
            opportunity_id: current.id,
            pipeline_id: current.pipeline_id,
            stage_id: input.stage_id!,
            previous_stage_id: current.stage_id,
            cause: "moved"
          })
        }
        yield* repo.addTags(current.id, yield* repo.ensureTags(current.workspace_id, input.tags ?? []))
        yield* repo.removeTags(current.id, input.deleted_tags ?? [])
        if (input.contact !== undefined) {
          yield* repo.updateContactOverrides(current.contact_id, {
            ...(input.contact.name !== undefined ? { custom_name: input.contact.name } : {}),
            ...(input.contact.email !== undefined ? { custom_email: input.contact.email } : {}),
            ...(input.contact.phone !== undefined ? { custom_phone: input.contact.phone } : {}),
            ...(input.contact.priority !== undefined ? { priority: input.contact.priority } : {})
          })
        }
      })).pipe(Effect.orDie)
      return yield* fullById(actor, current.id)
    })

    /** Contact id first; when that finds nothing, the identifier is retried as a phone. Never 404. */
    const ofContact = Effect.fn("Opportunities.ofContact")(
      function*(identifier: string, pipelineId: PipelineId | undefined) {
        const actor = yield* CurrentActor
        const id = asId(ContactId, identifier)
        if (Option.isSome(id)) {
          const byId = yield* reads.ofContact(actor.workspaceIds, { id: id.value }, pipelineId)
          if (byId.length > 0) return byId
        }
        const phone = normalisePhone(identifier)
        return phone === undefined ? [] : yield* reads.ofContact(actor.workspaceIds, { phone }, pipelineId)
      }
    )

    const filterOf = (actor: Actor, q: ListContactsQuery & Partial<ListOpportunitiesQuery>): OpportunityFilter => ({
      workspaceIds: actor.workspaceIds,
      pipelineId: q.pipeline_id,
      stageId: q.stage_id,
      status: q.status,
      priority: q.priority,
      q: q.q,
      tagIds: manyValues(q.tag_ids, q["tag_ids[]"]).map(Number).filter((n) => Number.isInteger(n) && n > 0),
      tagNames: manyValues(q.tags, q["tags[]"]),
      start: dateBound(q.start_date, false),
      end: dateBound(q.end_date, true)
    })

    const list = Effect.fn("Opportunities.list")(function*(query: ListOpportunitiesQuery) {
      const actor = yield* CurrentActor
      const [rows, total] = yield* reads.list(filterOf(actor, query), query.page, query.per_page)
      return toPage<Opportunity>(rows, total, query.page, query.per_page, yield* RequestUrl)
    })

    const listContacts = Effect.fn("Opportunities.listContacts")(function*(query: ListContactsQuery) {
      const actor = yield* CurrentActor
      const [rows, total] = yield* reads.listContacts(filterOf(actor, query), query.page, query.per_page)
      return toPage(rows, total, query.page, query.per_page, yield* RequestUrl)
    })

    const updateConversation = Effect.fn("Opportunities.updateConversation")(function*(
      id: ConversationId,
      input: UpdateConversation
    ) {
      const actor = yield* CurrentActor
      yield* repo.conversation(actor.workspaceIds, id).pipe(someOrFail(() => new ConversationNotFound()))
      return yield* repo.updateConversation(id, input)
    })

    return { create, get, update, ofContact, list, listContacts, updateConversation }
  })
}) {}
