import { Context, type Effect, type Option } from "effect"
import type { TemplateSend } from "./ChannelProvider.js"
import type { ReplyDraft, TurnContext } from "./ConversationTurns.js"

/** What a handoff event asks of the conversation's entity (docs/handoff.md): a bridge message, a summary. */
export interface HandoffDue {
  readonly conversationId: string
  /**
   * the contact's bridge message: a static text (the pipeline's approved template, once a provider's window closed),
   * or written by the agent from the context; null when none is due
   */
  readonly bridge:
    | { readonly kind: "static"; readonly text: string; readonly template?: TemplateSend }
    | {
      readonly kind: "ai_generated"
      readonly second: boolean
      readonly fallback: string
      readonly context: TurnContext
    }
    | null
  /** the conversation to summarise for the operator; null when no summary is due */
  readonly summary: TurnContext | null
}

/**
 * Implemented by the server: the entity's side of a handoff. Idempotent like every turn write: a bridge
 * is stored once per event, a repeat after a crash only delivers it.
 */
export interface HandoffTurnsPort {
  readonly due: (eventId: number) => Effect.Effect<Option.Option<HandoffDue>>
  /**
   * Stores the bridge message of an event (once), not yet delivered; returns its id. None when the
   * workspace's credits do not cover the draft's cost: nothing is stored (a free draft always is).
   */
  readonly commitBridge: (eventId: number, draft: ReplyDraft) => Effect.Effect<Option.Option<string>>
  /** Stores the summary on the handoff and in the conversation's notes. */
  readonly storeSummary: (eventId: number, summary: string) => Effect.Effect<void>
}
export class HandoffTurns extends Context.Tag("@parley/domain/HandoffTurns")<HandoffTurns, HandoffTurnsPort>() {}
