/**
 * Plays one eval case through the real engine (docs/evals.md): a sandboxed contact, opportunity and
 * conversation are made in the pipeline's workspace (`is_test`, `is_eval`), the opportunity enters its
 * starting stage like any created over the API (opening message, stage-start actions), and each contact
 * message is stored and handed to the conversation's entity exactly as the receiver does. The entity
 * debounces, decides, replies, moves stages, asks for a person and writes action runs as for any
 * conversation; delivery and actions see `is_eval` and record instead of sending. The player waits until
 * the engine has nothing left to do for the conversation before the next message, then checks what the
 * conversation came to.
 */
import { SqlClient } from "@effect/sql"
import {
  caseMessages,
  type EvalOutcome,
  type EvalVerdict,
  phrases,
  type PipelineId,
  type StageId,
  ulid,
  type WorkspaceId
} from "@parley/domain"
import { Conversation, type ModelRef, type ModelRegistry } from "@parley/worker"
import { Data, Duration, Effect, FiberSet, Option, Schedule } from "effect"
import { ModelRegistryLive } from "../engine/ModelRegistryLive.js"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { findStage, type Stage } from "./CaseRules.js"
import type { ResultRow } from "./EvalsRepo.js"
import { EvalsRepo } from "./EvalsRepo.js"
import { judge } from "./Judge.js"
import { SandboxRepo, type World } from "./SandboxRepo.js"
import { verdicts } from "./Verdicts.js"

/** The engine did not finish with the conversation in time. */
export class CaseTimedOut extends Data.TaggedError("CaseTimedOut")<{ readonly message: string }> {}

/** What a run's cases share: the pipeline, its stages and its model. */
export interface RunTarget {
  readonly workspaceId: WorkspaceId
  readonly pipelineId: PipelineId
  /** what the case's opportunity runs (`opportunities.config_version_id`): 0 the draft, else a version id */
  readonly configVersion: number
  readonly stages: ReadonlyArray<Stage>
  readonly model: ModelRef
  /** How long the engine may take for one message: the pipeline's debounce plus two minutes. */
  readonly settleMs: number
}

const POLL = Duration.millis(100)

export class CasePlayer extends Effect.Service<CasePlayer>()("@parley/server/CasePlayer", {
  dependencies: [SandboxRepo.Default, EvalsRepo.Default, OpportunitiesRepo.Default, ModelRegistryLive],
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sandbox = yield* SandboxRepo
    const repo = yield* EvalsRepo
    const opportunities = yield* OpportunitiesRepo
    const conversations = yield* Conversation.client
    const registry = yield* Effect.context<ModelRegistry>()
    // hand-overs run beside the case, as the receiver's do: the player waits on the database, not on the entity
    const handOvers = yield* FiberSet.make()

    /** The sandboxed contact, opportunity (entering its stage) and conversation, in one transaction. */
    const createWorld = (
      target: RunTarget,
      name: string,
      contactName: string | undefined,
      context: unknown,
      stageId: StageId
    ) =>
      sql.withTransaction(Effect.gen(function*() {
        const workspace_id = target.workspaceId
        const contact = yield* opportunities.insertContact({
          workspace_id,
          name: contactName ?? null,
          email: null,
          phone: null,
          priority: "medium",
          is_eval: true
        })
        const contact_id = Option.getOrThrow(contact)
        const opportunityId = yield* opportunities.insertOpportunity({
          workspace_id,
          pipeline_id: target.pipelineId,
          stage_id: stageId,
          contact_id,
          status: "active",
          name: `Eval: ${name}`.slice(0, 255),
          notes: null,
          context: context ?? null,
          is_test: true,
          source: null,
          source_id: null,
          is_eval: true,
          config_version_id: target.configVersion
        })
        const conversation = yield* opportunities.insertConversation({
          workspace_id,
          contact_id,
          channel_id: null,
          is_test: true,
          is_eval: true
        })
        yield* opportunities.linkConversation(opportunityId, conversation.id)
        yield* opportunities.recordStageEntry({
          workspace_id,
          opportunity_id: opportunityId,
          pipeline_id: target.pipelineId,
          stage_id: stageId,
          previous_stage_id: null,
          cause: "created"
        })
        return { conversationId: conversation.id, opportunityId } satisfies World
      })).pipe(Effect.orDie)

    /** Until the engine has nothing left to do for the conversation. */
    const settle = (world: World, target: RunTarget, what: string) =>
      sandbox.idle(world).pipe(
        Effect.repeat({ schedule: Schedule.spaced(POLL), until: (idle) => idle }),
        Effect.timeoutFail({
          duration: Duration.millis(target.settleMs),
          onTimeout: () =>
            new CaseTimedOut({
              message: `The agent had not finished ${what} after ${Math.round(target.settleMs / 1000)} s.`
            })
        })
      )

    const outcomeOf = (world: World) =>
      Effect.gen(function*() {
        const transcript = (yield* sandbox.transcript(world.conversationId)).map(({ id: _, ...entry }) => entry)
        const state = yield* sandbox.state(world)
        return {
          ...state,
          ai_messages: transcript.filter((e) => e.role === "agent" && e.status !== "failed").length,
          cost: transcript.reduce((sum, e) => sum + e.cost, 0),
          transcript,
          actions: yield* sandbox.actions(world)
        } satisfies EvalOutcome
      })

    const judged = (target: RunTarget, criteria: ReadonlyArray<string>, outcome: EvalOutcome) =>
      Effect.forEach(criteria, (c) => judge(target.model, c, outcome.transcript)).pipe(Effect.provide(registry))

    const play = Effect.fn("CasePlayer.play")(function*(target: RunTarget, result: ResultRow) {
      const spec = result.definition
      const stage = (spec.stage === undefined ? undefined : findStage(target.stages, spec.stage)) ?? target.stages[0]!
      const world = yield* createWorld(target, spec.name, spec.contact?.name, spec.context, stage.id)
      yield* repo.startResult(result.id, world)
      const finish = (
        status: "passed" | "failed" | "error",
        outcome: EvalOutcome | null,
        checks: ReadonlyArray<EvalVerdict>,
        cost: number,
        error: string | null
      ) =>
        Effect.zipRight(
          repo.finishResult(result.id, { status, outcome, verdicts: checks, cost, error }),
          // nothing more happens to a played case: its followups and late timers find it paused
          opportunities.updateOpportunity(world.opportunityId, { status: "paused" })
        )
      const played = Effect.gen(function*() {
        yield* settle(world, target, "the case's start (opening message, stage-start actions)")
        for (const [i, message] of caseMessages(spec).entries()) {
          if (message.wait_ms !== undefined && message.wait_ms > 0) {
            yield* Effect.sleep(Duration.millis(message.wait_ms))
          }
          const messageId = ulid()
          yield* sandbox.contactMessage({ id: messageId, conversationId: world.conversationId, text: message.text })
          yield* FiberSet.run(
            handOvers,
            conversations(String(world.conversationId)).Inbound({ messageId }, { discard: true }).pipe(
              Effect.catchAllCause((cause) =>
                Effect.logWarning("Eval hand-over failed; the hand-over sweep will retry it", cause)
              )
            )
          )
          yield* settle(world, target, `with message ${i + 1}`)
        }
        const outcome = yield* outcomeOf(world)
        const judgements = yield* judged(target, phrases(spec.expect?.judge), outcome)
        const judgeCost = judgements.reduce((sum, j) => sum + j.cost, 0)
        if (!(yield* sandbox.charge(target.workspaceId, judgeCost))) {
          const failure =
            `The workspace's credits do not cover the judge's cost (${judgeCost}): the case was not judged.`
          return yield* finish("error", outcome, [], outcome.cost, failure)
        }
        const checks = [...verdicts(spec, outcome, target.stages), ...judgements.map((j) => j.verdict)]
        yield* finish(
          checks.every((v) => v.passed) ? "passed" : "failed",
          outcome,
          checks,
          outcome.cost + judgeCost,
          null
        )
      })
      yield* played.pipe(
        Effect.catchAllCause((cause) =>
          Effect.gen(function*() {
            // a sandbox deleted while the case played (by hand: the retention keeps a beating run's) has no outcome
            const outcome = yield* outcomeOf(world).pipe(Effect.catchAllCause(() => Effect.succeed(null)))
            const failure = outcome === null
              ? "The case's sandbox could not be read: it was deleted while the case played."
              : cause._tag === "Fail"
              ? cause.error.message
              : "The case could not be played (see the server log)."
            if (cause._tag !== "Fail") yield* Effect.logError("An eval case failed", cause)
            yield* finish("error", outcome, [], outcome?.cost ?? 0, failure)
          })
        )
      )
    })

    return { play }
  })
}) {}
