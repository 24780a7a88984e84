/**
 * A knowledge source's sync as a durable workflow (issue 41): steps of a few pages each, every step an activity,
 * then the finish (stale points deleted, the source `ready` or `failed`). The run's frontier and each page's outcome
 * are stored by the steps themselves, so a crash repeats at most the step it cut short, and a restart resumes at the
 * first page not yet read. The key is the source and its run: a run is executed once, and the dispatcher starts the
 * next run of a source only once this one has finished.
 */
import { Activity, Workflow } from "@effect/workflow"
import { KnowledgeSyncs, SourceStep } from "@parley/domain"
import { Effect, Schema } from "effect"

export const SyncKnowledgeSource = Workflow.make({
  name: "SyncKnowledgeSource",
  payload: { sourceId: Schema.Int, run: Schema.Int },
  idempotencyKey: ({ run, sourceId }) => `${sourceId}:${run}`
})

export const SyncKnowledgeSourceLive = SyncKnowledgeSource.toLayer(
  Effect.fn("SyncKnowledgeSource")(function*({ run, sourceId }) {
    const syncs = yield* KnowledgeSyncs
    for (let n = 1;; n++) {
      const step = yield* Activity.make({ name: `step-${n}`, success: SourceStep, execute: syncs.step(sourceId, run) })
      if (step.done) break
    }
    yield* Activity.make({ name: "finish", execute: syncs.finish(sourceId, run) })
  })
)
