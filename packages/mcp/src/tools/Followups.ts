/** A stage's followup sequence (SPEC.md 4.5 get_stage_followup, create_followup, update_followup). */
import { FollowupIntervals, NotFound, SaveFollowup, StageFollowup, Unprocessable } from "@parley/domain"
import { Effect, Schema, Struct } from "effect"
import { McpBackend } from "../Backend.js"
import { resultOf } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { required, stageId } from "../ToolFields.js"

const saved = resultOf(StageFollowup)

export const followupTools: ReadonlyArray<Tool> = [
  tool({
    name: "get_stage_followup",
    title: "Get a stage's followup",
    group: "discover",
    description: "A stage's followup sequence, if it has one: intervals, instructions, activation, next stage.",
    input: Schema.Struct({ stage_id: stageId }),
    output: saved,
    run: ({ stage_id }) =>
      Effect.flatMap(McpBackend, (b) => b.stageFollowup(stage_id)).pipe(Effect.map((f) => ({ ...f })))
  }),
  tool({
    name: "create_followup",
    title: "Create a stage's followup",
    group: "build",
    scope: "pipelines:write",
    description:
      "Creates a stage's followup (one per stage, for neutral stages): after each interval without an answer the agent writes to the contact.",
    input: Schema.Struct({
      stage_id: stageId,
      is_active: required(Schema.Boolean, "true runs it, false keeps it a draft"),
      intervals: required(FollowupIntervals, "The waits in sequence order, 1 to 100 of them"),
      ...Struct.pick(SaveFollowup.fields, "instructions", "after_followup_stage_id", "assets", "template")
    }),
    output: saved,
    run: ({ stage_id, ...input }) =>
      Effect.gen(function*() {
        const b = yield* McpBackend
        if ((yield* b.stageFollowup(stage_id)).has_followup) {
          return yield* Unprocessable.of([{
            field: "stage_id",
            message: "The stage already has a followup; change it with update_followup."
          }])
        }
        return { ...(yield* b.saveFollowup(stage_id, input)) }
      })
  }),
  tool({
    name: "update_followup",
    title: "Update a stage's followup",
    group: "update",
    scope: "pipelines:write",
    description: "Changes a stage's followup (intervals are replaced whole); create_followup makes one first.",
    input: Schema.Struct({ stage_id: stageId, ...SaveFollowup.fields }),
    output: saved,
    run: ({ stage_id, ...input }) =>
      Effect.gen(function*() {
        const b = yield* McpBackend
        if (!(yield* b.stageFollowup(stage_id)).has_followup) {
          return yield* new NotFound({ message: "This stage has no followup; create one with create_followup." })
        }
        return { ...(yield* b.saveFollowup(stage_id, input)) }
      })
  })
]
