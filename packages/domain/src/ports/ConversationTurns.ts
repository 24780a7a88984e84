import { Context, type Effect, type Option } from "effect"

/** The newest unanswered contact message of a conversation, and how long to wait for more. */
export interface PendingTurn {
  /** The newest contact message not yet answered: the reply covers it and every earlier one. */
  readonly latestMessageId: string
  readonly latestAt: Date
  /** The pipeline's debounce window: a burst of messages within it gets one reply. */
  readonly debounceMs: number
}

/**
 * Implemented by the server: what the conversation entity reads and does. `respond` answers every
 * unanswered contact message up to `upToMessageId` and marks them answered; it is idempotent (a repeat
 * after a crash finds them answered and does nothing) and records failures instead of failing.
 */
export interface ConversationTurnsPort {
  readonly pending: (conversationId: string) => Effect.Effect<Option.Option<PendingTurn>>
  readonly respond: (conversationId: string, upToMessageId: string) => Effect.Effect<void>
  /** Conversations whose contact messages were stored but never reached their entity (a crash in between). */
  readonly orphaned: (olderThanMs: number) => Effect.Effect<ReadonlyArray<{ readonly conversationId: string; readonly messageId: string }>>
}
export class ConversationTurns extends Context.Tag("@parley/domain/ConversationTurns")<ConversationTurns, ConversationTurnsPort>() {}
