/**
 * The conversation engine's other jobs besides replies (ConversationTurns.ts), each a port the server implements:
 * delivering what a turn stored, a stage's opening message, a followup sequence's step. The entity and the
 * stage-entry consumer (packages/worker) use them; every write is idempotent and failures are recorded, never raised.
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { FollowupDue, OpeningContext, ReplyDraft } from "./ConversationTurns.js"

/** Delivery of messages a turn stored: the channel's hand-off (socket, reply webhook, provider adapter). */
export interface TurnDeliveriesPort {
  /** Messages stored but not yet delivered (a crash between storing and delivering). */
  readonly undelivered: (conversationId: string) => Effect.Effect<ReadonlyArray<string>>
  /** Hands a stored message to the conversation's channel; marks it sent (or its retry due). */
  readonly deliver: (messageId: string) => Effect.Effect<void>
}
export class TurnDeliveries
  extends Context.Tag("@parley/domain/TurnDeliveries")<TurnDeliveries, TurnDeliveriesPort>()
{}

/** Stage entries: the outbox of stage moves, consumed once, and the entered stage's opening message. */
export interface OpeningTurnsPort {
  /** The opening message due for a stage entry, if the stage has one and the opportunity a conversation. */
  readonly opening: (entryId: number) => Effect.Effect<Option.Option<OpeningContext>>
  /**
   * Stores an opening message (once per stage entry), not yet delivered; returns its id (none: the credits do not cover
   * it).
   */
  readonly commitOpening: (
    conversationId: string,
    entryId: number,
    draft: ReplyDraft
  ) => Effect.Effect<Option.Option<string>>
  /** Stage entries not yet consumed, oldest first, with the conversation of their opportunity (if any). */
  readonly stageEntries: (
    limit: number
  ) => Effect.Effect<ReadonlyArray<{ readonly entryId: number; readonly conversationId: string | null }>>
  readonly consumeStageEntry: (entryId: number) => Effect.Effect<void>
  /** Emits when stage entries were written (a database notification); may miss some, so consumers also poll. */
  readonly stageEntriesWritten: Stream.Stream<void>
}
export class OpeningTurns extends Context.Tag("@parley/domain/OpeningTurns")<OpeningTurns, OpeningTurnsPort>() {}

/** A followup sequence's step, checked and stored in the conversation's entity (so in order with its replies). */
export interface FollowupTurnsPort {
  /** The followup due at `step` of a sequence: or why none is sent. */
  readonly followup: (sequenceId: number, step: number) => Effect.Effect<FollowupDue>
  /**
   * Stores a followup (once per sequence step), not yet delivered; returns its id (none: the credits do not cover it).
   */
  readonly commitFollowup: (
    conversationId: string,
    sequenceId: number,
    step: number,
    draft: ReplyDraft
  ) => Effect.Effect<Option.Option<string>>
}
export class FollowupTurns extends Context.Tag("@parley/domain/FollowupTurns")<FollowupTurns, FollowupTurnsPort>() {}
