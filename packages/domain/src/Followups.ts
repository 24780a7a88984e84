/**
 * Followups (SPEC.md 4.5 `create_followup`, `get_stage_followup`, `update_followup`): at most one per
 * stage. When an opportunity enters a stage whose followup is active, the intervals run in array order;
 * after each one, if the contact has not written since, the agent writes a followup per `instructions`.
 * A contact message ends the sequence. After the last interval the opportunity moves to
 * `after_followup_stage_id` (a stage entry like any other move, so that stage's automations run).
 *
 * `max_messages`: the most followup messages one run of this stage's sequence can send, which is
 * `min(intervals, pipeline followup_limit)`. `followup_limit` caps followup messages per conversation
 * (every stage's sequences together); once reached no more are sent, but the move after the last
 * interval still happens.
 */
import { Schema } from "effect"
import { Id, PipelineId, StageId } from "./Ids.js"
import { all, IntBetween, Text, Timestamp } from "./Schemas.js"
import { MessageTemplate } from "./Templates.js"

export const FollowupId = Id("FollowupId")
export type FollowupId = typeof FollowupId.Type

export const IntervalUnit = Schema.Literal("minute", "hour", "day", "week", "month")
export type IntervalUnit = typeof IntervalUnit.Type

export class FollowupInterval extends Schema.Class<FollowupInterval>("FollowupInterval")({
  interval_value: Schema.propertySignature(IntBetween(1, 100)).annotations({ description: "How many units to wait" }),
  interval_unit: Schema.propertySignature(IntervalUnit).annotations({ description: "The unit; a month is 30 days" })
}) {}

export const FollowupIntervals = Schema.Array(FollowupInterval).pipe(
  Schema.minItems(1, { message: () => "must contain at least 1 interval" }),
  Schema.maxItems(100, { message: () => "may not contain more than 100 intervals" })
)

const UNIT_MS: Record<IntervalUnit, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
  // a month is 30 days: the wait is a duration, not a calendar date
  month: 30 * 86_400_000
}

/** The wait of one interval in milliseconds. */
export const intervalMillis = (i: { readonly interval_value: number; readonly interval_unit: IntervalUnit }) =>
  i.interval_value * UNIT_MS[i.interval_unit]

/** The most followup messages one run of a stage's sequence can send. */
export const maxFollowupMessages = (intervals: number, followupLimit: number) => Math.min(intervals, followupLimit)

export class Followup extends Schema.Class<Followup>("Followup")({
  id: FollowupId,
  stage_id: StageId,
  pipeline_id: PipelineId,
  is_active: Schema.Boolean,
  intervals: Schema.Array(FollowupInterval),
  instructions: Schema.NullOr(Schema.String),
  assets: Schema.NullOr(Schema.String),
  after_followup_stage_id: Schema.NullOr(StageId),
  template: Schema.NullOr(MessageTemplate),
  max_messages: Schema.Int.annotations({
    description:
      "The most followup messages one run of this sequence can send: min(intervals, the pipeline's followup_limit)"
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/** `get_stage_followup`: whether the stage has a followup, and which. */
export class StageFollowup extends Schema.Class<StageFollowup>("StageFollowup")({
  has_followup: Schema.Boolean,
  followup: Schema.NullOr(Followup)
}) {}

/**
 * Creates the stage's followup or changes the fields sent. Creating needs `is_active` and `intervals`
 * (SPEC.md `create_followup`); an update may send any subset.
 */
export const SaveFollowup = Schema.Struct({
  is_active: Schema.optional(Schema.Boolean).annotations({ description: "false keeps it a draft" }),
  intervals: Schema.optional(FollowupIntervals).annotations({
    description: "1 to 100 waits, run in array order; a followup may be sent after each"
  }),
  instructions: Schema.optional(Schema.NullOr(Text(10_000))).annotations({
    description: "What the agent writes in a followup"
  }),
  assets: Schema.optional(Schema.NullOr(Text(10_000))).annotations({
    description: "Material the agent may share in followups"
  }),
  after_followup_stage_id: Schema.optional(Schema.NullOr(StageId)).annotations({
    description: "Another stage of the same pipeline, entered once the intervals are exhausted"
  }),
  template: Schema.optional(Schema.NullOr(MessageTemplate)).annotations({
    description:
      "The approved template sent at a step that falls after a channel's service window closed (WhatsApp); null: such a step is skipped"
  })
}).annotations({ ...all, identifier: "SaveFollowup" })
export type SaveFollowup = typeof SaveFollowup.Type

export const FollowupDeleted = Schema.Struct({ stage_id: StageId, deleted: Schema.Boolean }).annotations({
  identifier: "FollowupDeleted"
})
