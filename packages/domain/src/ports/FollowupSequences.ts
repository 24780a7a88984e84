import { Context, type Effect, type Option, Schema } from "effect"

/**
 * What one step of a followup sequence came to. The first three let the sequence go on (to its next
 * interval, and after the last to the move); `rearmed` and `paused` keep it at the same step; the others end it:
 * no more followups and no move.
 */
export const FollowupOutcome = Schema.Literal(
  /** the followup was written, stored and delivered */
  "sent",
  /** the conversation has as many followups as the pipeline's `followup_limit`: none sent, the sequence goes on */
  "limit_reached",
  /** nothing could be sent now (no conversation, conversation or opportunity paused, no agent, no credits) */
  "skipped",
  /** a message was sent to the contact since the step's wait began: the wait counts again from it (`next_due_at`) */
  "rearmed",
  /** the contact wrote after the last message sent to them: the step waits until the next one is sent */
  "paused",
  /** the channel's provider window has closed (WhatsApp: 24 hours): this step is skipped, the sequence goes on */
  "outside_service_window",
  /** the contact wrote after the sequence started (sequences started before followups counted silence) */
  "contact_replied",
  /** the opportunity left the stage (or entered it again, which starts a sequence of its own) */
  "stage_left",
  /** the stage's followup was deactivated or deleted */
  "followup_inactive",
  /** the sequence had already ended */
  "ended"
)
export type FollowupOutcome = typeof FollowupOutcome.Type

export const endsSequence = (outcome: FollowupOutcome) =>
  outcome !== "sent" && outcome !== "limit_reached" && outcome !== "skipped" && outcome !== "rearmed" &&
  outcome !== "paused" && outcome !== "outside_service_window"

/** A started sequence: its waits in order (a copy of the followup's intervals when it started). */
export class FollowupPlan extends Schema.Class<FollowupPlan>("FollowupPlan")({
  sequenceId: Schema.Number,
  conversationId: Schema.NullOr(Schema.String),
  delaysMs: Schema.Array(Schema.Number)
}) {}

/** How a sequence ended after its last interval. */
export const FollowupEnd = Schema.Literal(
  "moved",
  "completed",
  "contact_replied",
  "stage_left",
  "followup_inactive",
  "ended"
)
export type FollowupEnd = typeof FollowupEnd.Type

/**
 * Implemented by the server: the lifecycle of followup sequences (the FollowupSequence workflow runs
 * them; the conversation entity writes the followups themselves). "Now" is the application's `Clock`,
 * the one durable waits use.
 */
export interface FollowupSequencesPort {
  /** Whether the stage an entry is for has an active followup (a sequence is to start). */
  readonly starts: (entryId: number) => Effect.Effect<boolean>
  /**
   * Creates the entry's sequence (once; a repeat returns it), or none when the followup is inactive or the entry out of
   * date.
   */
  readonly plan: (entryId: number) => Effect.Effect<Option.Option<FollowupPlan>>
  /** Without a conversation to write to: whether the sequence may go on ("skipped") or why it ends. */
  readonly check: (sequenceId: number) => Effect.Effect<FollowupOutcome>
  /** `step` is done; the next is due in `nextDelayMs`. */
  readonly advance: (sequenceId: number, step: number, nextDelayMs: number) => Effect.Effect<void>
  /** How long the current step still waits: until `next_due_at`, never less than 0. */
  readonly remaining: (sequenceId: number) => Effect.Effect<number>
  /** The step's workflow waits on the durable deferred `deferred` until a message is sent to the contact. */
  readonly pause: (sequenceId: number, deferred: string) => Effect.Effect<void>
  /**
   * Paused sequences to which a message has been sent since the contact wrote: their stage entry and the deferred
   * to complete. `resumed` forgets the deferred once it is completed.
   */
  readonly resumable: Effect.Effect<ReadonlyArray<{ readonly entryId: number; readonly deferred: string }>>
  readonly resumed: (entryId: number) => Effect.Effect<void>
  /** Ends the sequence early, and why. */
  readonly cancel: (sequenceId: number, reason: FollowupOutcome) => Effect.Effect<void>
  /**
   * After the last interval: moves the opportunity to `after_followup_stage_id` (a stage entry, like any
   * move, so that stage's automations run) unless the sequence was ended meanwhile; marks it finished.
   */
  readonly finish: (sequenceId: number) => Effect.Effect<FollowupEnd>
  /** Stage entries of running sequences whose next step is overdue by more than `graceMs`. */
  readonly overdue: (graceMs: number) => Effect.Effect<ReadonlyArray<number>>
}
export class FollowupSequences
  extends Context.Tag("@parley/domain/FollowupSequences")<FollowupSequences, FollowupSequencesPort>()
{}
