/**
 * A pipeline's stored eval cases (docs/evals.md): written over REST or MCP, or saved from a real
 * conversation with the contact's details taken out. Scoped like pipelines: another workspace's case
 * or pipeline is not found.
 */
import {
  type ConversationId,
  ConversationNotFound,
  CurrentActor,
  EvalCase,
  type EvalCaseId,
  EvalCaseNotFound,
  type EvalCaseSpec,
  Forbidden,
  hasScope,
  missingScopeMessage,
  type PipelineId,
  PipelineNotFound,
  type SaveConversationAsCase,
  Unprocessable
} from "@parley/domain"
import { Effect } from "effect"
import { someOrFail } from "../util/Effects.js"
import { anonymise, anonymiseValues } from "./Anonymise.js"
import { caseIssues } from "./CaseRules.js"
import { ConversationCaseRepo } from "./ConversationCaseRepo.js"
import { type CaseRow, EvalsRepo } from "./EvalsRepo.js"

const nameTaken = Unprocessable.of([{ field: "name", message: "is the name of another eval case of this pipeline" }])

const toCase = (r: CaseRow) => new EvalCase(r)

export class EvalCases extends Effect.Service<EvalCases>()("@parley/server/EvalCases", {
  dependencies: [EvalsRepo.Default, ConversationCaseRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* EvalsRepo
    const conversations = yield* ConversationCaseRepo

    const pipelineOf = (id: number) =>
      Effect.flatMap(CurrentActor, (actor) => repo.pipeline(actor.workspaceIds, id)).pipe(
        someOrFail(() => new PipelineNotFound())
      )
    const caseOf = (id: number) =>
      Effect.flatMap(CurrentActor, (actor) => repo.findCase(actor.workspaceIds, id)).pipe(
        someOrFail(() => new EvalCaseNotFound())
      )

    const checked = (pipelineId: number, spec: EvalCaseSpec) =>
      Effect.flatMap(repo.stages(pipelineId), (stages) => {
        const issues = caseIssues(spec, stages)
        return issues.length > 0 ? Unprocessable.of(issues) : Effect.void
      })

    const insert = (
      pipeline: { id: number; workspace_id: number },
      spec: EvalCaseSpec,
      conversationId: number | null
    ) =>
      Effect.gen(function*() {
        const id = yield* repo.insertCase({
          workspaceId: pipeline.workspace_id,
          pipelineId: pipeline.id,
          spec,
          source: conversationId === null ? "api" : "conversation",
          conversationId
        })
        if (id === undefined) return yield* nameTaken
        return toCase(yield* caseOf(id))
      })

    const list = Effect.fn("EvalCases.list")(function*(pipelineId: PipelineId) {
      const pipeline = yield* pipelineOf(pipelineId)
      return (yield* repo.cases(pipeline.id)).map(toCase)
    })

    const create = Effect.fn("EvalCases.create")(function*(pipelineId: PipelineId, spec: EvalCaseSpec) {
      const pipeline = yield* pipelineOf(pipelineId)
      yield* checked(pipeline.id, spec)
      return yield* insert(pipeline, spec, null)
    })

    const get = Effect.fn("EvalCases.get")(function*(id: EvalCaseId) {
      return toCase(yield* caseOf(id))
    })

    const replace = Effect.fn("EvalCases.replace")(function*(id: EvalCaseId, spec: EvalCaseSpec) {
      const current = yield* caseOf(id)
      yield* checked(current.pipeline_id, spec)
      if (!(yield* repo.replaceCase(id, spec))) return yield* nameTaken
      return toCase(yield* caseOf(id))
    })

    const remove = Effect.fn("EvalCases.remove")(function*(id: EvalCaseId) {
      yield* caseOf(id)
      yield* repo.deleteCase(id)
      return { id, deleted: true }
    })

    /** The contact's messages anonymised, the opportunity's start and context, and what happened as expectations. */
    const saveConversation = Effect.fn("EvalCases.saveConversation")(
      function*(conversationId: ConversationId, input: SaveConversationAsCase) {
        const actor = yield* CurrentActor
        // the case carries what the contact wrote: reading it takes the scope reading the conversation takes
        if (!hasScope(actor.scopes, "conversations:read")) {
          return yield* new Forbidden({ message: missingScopeMessage("conversations:read") })
        }
        const c = yield* conversations.read(actor.workspaceIds, conversationId).pipe(
          someOrFail(() => new ConversationNotFound())
        )
        if (c.is_eval) {
          return yield* Unprocessable.of([{ field: "conversation", message: "is an eval's own conversation" }])
        }
        if (c.pipeline_id === null || c.first_stage_id === null) {
          return yield* Unprocessable.of([{ field: "conversation", message: "has no opportunity in a pipeline" }])
        }
        if (c.messages.length === 0) {
          return yield* Unprocessable.of([{ field: "conversation", message: "has no contact messages" }])
        }
        const known = { name: c.contact_name, email: c.contact_email, phone: c.contact_phone }
        const pipeline = yield* pipelineOf(c.pipeline_id)
        const spec: EvalCaseSpec = {
          name: input.name ?? `Conversation ${c.conversation_id}`,
          description: `Saved from conversation ${c.conversation_id}; contact details replaced.`,
          stage: c.first_stage_id as never,
          ...(c.context === null ? {} : { context: anonymiseValues(c.context, known) as Record<string, unknown> }),
          messages: c.messages.slice(0, 50).map((m) => anonymise(m, known).slice(0, 10_000)),
          expect: {
            ...(c.stage_name === null ? {} : { stage: c.stage_name }),
            ...(c.status === null ? {} : { status: c.status as never }),
            handoff: c.handoff_requested,
            ...(c.actions.length === 0 ? {} : { actions: c.actions })
          }
        }
        return yield* insert(pipeline, spec, c.conversation_id)
      }
    )

    return { list, create, get, replace, remove, saveConversation }
  })
}) {}
