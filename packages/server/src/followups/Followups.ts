import { SqlClient } from "@effect/sql"
import {
  CurrentActor,
  FollowupNotFound,
  type SaveFollowup,
  StageFollowup,
  type StageId,
  StageNotFound,
  Unprocessable,
  ValidationIssue
} from "@parley/domain"
import { Effect, Option } from "effect"
import { someOrFail } from "../util/Effects.js"
import { FollowupsRepo } from "./FollowupsRepo.js"

/** A stage's followup (SPEC.md 4.5), scoped like stages: another workspace's stage is not found. */
export class Followups extends Effect.Service<Followups>()("@parley/server/Followups", {
  dependencies: [FollowupsRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* FollowupsRepo
    const sql = yield* SqlClient.SqlClient

    const findStage = (id: StageId) =>
      Effect.flatMap(CurrentActor, (actor) => repo.findStage(actor.workspaceIds, id)).pipe(
        someOrFail(() => new StageNotFound())
      )

    const current = (stageId: StageId) =>
      Effect.map(
        repo.byStage(stageId),
        (f) => new StageFollowup({ has_followup: Option.isSome(f), followup: Option.getOrNull(f) })
      )

    const get = Effect.fn("Followups.get")(function*(stageId: StageId) {
      yield* findStage(stageId)
      return yield* current(stageId)
    })

    /**
     * Creates the followup (`is_active` and `intervals` required) or changes the fields sent; every problem in one 422.
     */
    const save = Effect.fn("Followups.save")(function*(stageId: StageId, input: SaveFollowup) {
      const stage = yield* findStage(stageId)
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.lockStage(stageId)
        const existing = yield* repo.byStage(stageId)
        const issues: Array<ValidationIssue> = []
        if (Option.isNone(existing)) {
          if (input.is_active === undefined) {
            issues.push(new ValidationIssue({ field: "is_active", message: "is missing" }))
          }
          if (input.intervals === undefined) {
            issues.push(new ValidationIssue({ field: "intervals", message: "is missing" }))
          }
        }
        const after = input.after_followup_stage_id
        if (
          after !== undefined && after !== null &&
          (after === stageId || !(yield* repo.stageInPipeline(stage.pipeline_id, after)))
        ) {
          issues.push(
            new ValidationIssue({
              field: "after_followup_stage_id",
              message: "must be another stage of the same pipeline"
            })
          )
        }
        if (issues.length > 0) return yield* Unprocessable.of(issues)
        if (Option.isNone(existing)) {
          yield* repo.insert(stage, {
            is_active: input.is_active!,
            intervals: input.intervals!,
            instructions: input.instructions ?? null,
            assets: input.assets ?? null,
            after_followup_stage_id: after ?? null,
            template: input.template ?? null
          })
        } else {
          const set: Record<string, unknown> = {}
          for (
            const key of [
              "is_active",
              "intervals",
              "instructions",
              "assets",
              "after_followup_stage_id",
              "template"
            ] as const
          ) {
            if (input[key] !== undefined) set[key] = input[key]
          }
          yield* repo.update(stageId, set)
        }
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      return yield* current(stageId)
    })

    const remove = Effect.fn("Followups.remove")(function*(stageId: StageId) {
      yield* findStage(stageId)
      const deleted = yield* repo.remove(stageId)
      if (!deleted) return yield* new FollowupNotFound()
      return { stage_id: stageId, deleted: true }
    })

    return { get, save, remove }
  })
}) {}
