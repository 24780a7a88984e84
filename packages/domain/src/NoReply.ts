/**
 * Why a contact's message got no reply (docs/agent.md, "When no reply is made"). The agent records it on
 * the contact messages of the turn (`messages.handled_reason`); history and `list_messages` return it as
 * `no_reply_reason`, so a silent agent always says why.
 */
import { Schema } from "effect"

/** Every reason, in the order a turn checks them (the first that applies is recorded). */
export const NoReplyReasons = [
  "no_agent",
  "paused",
  "waiting_for_person",
  "outside_service_window",
  "no_subscription",
  "no_credits",
  "message_limit",
  "cost_limit",
  "model_not_configured",
  "provider_error",
  "reply_withheld"
] as const

export type NoReplyReason = typeof NoReplyReasons[number]

/** One sentence per reason, for people: log lines and the docs say the same. */
export const noReplySentence: { readonly [R in NoReplyReason]: string } = {
  no_agent: "The conversation's channel is not linked to a pipeline, or its pipeline is inactive or archived.",
  paused: "The conversation or its opportunity is paused (an operator has it).",
  waiting_for_person:
    "A person was asked for (docs/handoff.md); the agent is silent until an operator takes over or hands back.",
  outside_service_window:
    "The channel's provider allows free-form messages only within its service window (WhatsApp: 24 hours after the contact's latest message, by the provider's clock), and it has closed.",
  no_subscription: "The workspace has no active subscription.",
  no_credits: "The workspace has no credits left.",
  message_limit: "The conversation reached its pipeline's max_conversation_messages.",
  cost_limit: "The conversation's cost reached its pipeline's max_conversation_cost.",
  model_not_configured:
    "The pipeline's model needs a provider key that is not set on the server (OPENAI_API_KEY or ANTHROPIC_API_KEY).",
  provider_error: "The model's provider failed, after retries; the failed reply carries the error.",
  reply_withheld:
    "The output guard withheld the model's reply and its one rewrite: they repeated text meant only for the agent (instructions, a note, a tool or stage name)."
}

export const NoReplyReason = Schema.Literal(...NoReplyReasons).annotations({
  identifier: "NoReplyReason",
  description: `Why no reply was made to this contact message:\n${
    NoReplyReasons.map((r) => `- \`${r}\`: ${noReplySentence[r]}`).join("\n")
  }`
})

/** On a message record: the reason on a contact message the agent did not answer; null otherwise. */
export const NoReplyReasonField = Schema.NullOr(NoReplyReason).annotations({
  description:
    "Contact (`role: user`) messages only: why the agent made no reply to it (`no_credits`, `no_subscription`, `paused`, `waiting_for_person`, `message_limit`, `cost_limit`, `model_not_configured`, `provider_error`, `reply_withheld`, `no_agent`). Null when a reply was made, while one is still pending, and on assistant messages."
})

const known = new Set<string>(NoReplyReasons)

/**
 * The public reason of a stored message. `handled_reason` holds `replied` or a reason; turns handled
 * before reasons were public stored `failed` for a provider error.
 */
export const noReplyReasonOf = (role: string, handledReason: string | null): NoReplyReason | null => {
  if (role !== "user" || handledReason === null) return null
  if (handledReason === "failed") return "provider_error"
  return known.has(handledReason) ? handledReason as NoReplyReason : null
}

/** A stored message row with `handled_reason` turned into the public `no_reply_reason`. */
export const withNoReplyReason = <R extends { readonly role: string; readonly handled_reason: string | null }>(
  { handled_reason, ...row }: R
): Omit<R, "handled_reason"> & { readonly no_reply_reason: NoReplyReason | null } => ({
  ...row,
  no_reply_reason: noReplyReasonOf(row.role, handled_reason)
})
