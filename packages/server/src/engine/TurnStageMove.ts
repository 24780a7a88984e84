import { StageId } from "@parley/domain"
import { Effect, Option } from "effect"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import type { ConversationRow } from "./TurnRows.js"
import { TurnsRepo } from "./TurnsRepo.js"

export const makeStageMove = Effect.gen(function*() {
  const repo = yield* TurnsRepo
  const opportunities = yield* OpportunitiesRepo
  /** The stage move the model asked for, through OpportunitiesRepo (a won or lost stage sets the status). */
  return Effect.fn("ConversationTurns.moveStage")(
    function*(c: ConversationRow, stageId: number, version: number) {
      if (c.opportunity_id === null || c.opportunity_pipeline_id === null || c.opportunity_stage_id === stageId) {
        return
      }
      const stage = yield* repo.stageNature(stageId, c.opportunity_pipeline_id, version)
      if (Option.isNone(stage)) {
        return yield* Effect.logWarning(
          "A stage move was ignored: the stage is not in the pipeline as it runs, or was deleted from its draft"
        ).pipe(
          Effect.annotateLogs({ stage_id: stageId, opportunity_id: c.opportunity_id })
        )
      }
      const nature = stage.value.nature
      // the model's stage id, now known to be a stage of the pipeline
      const stage_id = StageId.make(stageId)
      yield* opportunities.updateOpportunity(c.opportunity_id, {
        stage_id,
        ...(nature === "neutral" ? {} : { status: nature })
      })
      yield* opportunities.recordStageEntry({
        workspace_id: c.workspace_id,
        opportunity_id: c.opportunity_id,
        pipeline_id: c.opportunity_pipeline_id,
        stage_id,
        previous_stage_id: c.opportunity_stage_id,
        cause: "moved"
      })
    }
  )
})
