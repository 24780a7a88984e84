/**
 * The handoff side of a turn (docs/handoff.md): whether the agent may ask for a person and what the
 * contact is told, the pipeline's failure rule, and the texts the keyword rule reads (the turn's own
 * unhandled messages, so messages handled while waiting are never read again: no loop).
 */
import {
  ConversationId,
  DEFAULT_BRIDGE_TEXT,
  DEFAULT_FALLBACK_MESSAGE,
  type HandoffMove,
  type TurnHandoff
} from "@parley/domain"
import { Effect, Option } from "effect"
import { Handoff } from "../handoff/Handoff.js"
import { HandoffRulesRepo } from "./HandoffRulesRepo.js"

/** The conversation's columns a turn's handoff reads. */
export interface HandoffConversation {
  readonly handoff_returned_upto: string | null
  readonly stage_handoff_instructions: string | null
}

/** The pipeline's handoff settings a turn reads. */
export interface HandoffPipeline {
  readonly handoff_instructions: string | null
  readonly handoff_bridge_mode: "static" | "ai_generated"
  readonly handoff_bridge_text: string | null
}

export const makeTurnHandoffRules = Effect.gen(function*() {
  const repo = yield* HandoffRulesRepo
  const handoff = yield* Handoff

  /** The handoff part of a turn's context: no request for messages an operator already handed back after. */
  const turnHandoff = (c: HandoffConversation, p: HandoffPipeline, upTo: string | null): TurnHandoff => ({
    canRequest: upTo === null || c.handoff_returned_upto === null || upTo > c.handoff_returned_upto,
    instructions: [p.handoff_instructions, c.stage_handoff_instructions].filter((t): t is string =>
      t !== null && t.trim() !== ""
    )
      .join("\n") || null,
    bridgeMode: p.handoff_bridge_mode,
    bridgeText: p.handoff_bridge_text ?? DEFAULT_BRIDGE_TEXT
  })

  /**
   * After a reply failed (`error`: why, one line): with `handoff_on_failure` (the default) the contact is
   * told the pipeline's fallback message as the bridge of a request for a person; without it, the
   * `handoff_after_failures` rule (that many failed replies in a row ask for a person).
   */
  const failureRule = (conversationId: string, error: string) =>
    Effect.gen(function*() {
      const found = yield* repo.failureRule(conversationId)
      if (Option.isNone(found)) return
      const rule = found.value
      const move: HandoffMove | null = rule.on_failure
        ? {
          action: "request",
          actor: "rule",
          reason: `The reply could not be made: ${error}`,
          bridgeText: rule.fallback_message ?? DEFAULT_FALLBACK_MESSAGE
        }
        : rule.limit !== null && rule.failed >= rule.limit
        ? { action: "request", actor: "rule", reason: `${rule.limit} replies in a row could not be made` }
        : null
      if (move === null) return
      yield* handoff.moveAsSystem(ConversationId.make(Number(conversationId)), move).pipe(
        Effect.catchAll((e) => Effect.logWarning("The failure rule could not ask for a person", e))
      )
    })

  /** The texts of the contact messages a turn answers: unhandled, up to `upTo`. */
  const turnTexts = (conversationId: string, upTo: string) =>
    Effect.map(repo.turnTexts(conversationId, upTo), (texts) => texts.map((t) => t ?? ""))

  return { turnHandoff, failureRule, turnTexts }
})
