/**
 * Human handoff (docs/handoff.md): one state machine for every surface. A conversation is with the
 * agent (`ai`), waiting for a person (`waiting`), or with an operator (`human`). SPEC.md's `status`
 * follows it: `human` is `paused`, the other two `active`.
 */
import { Schema } from "effect"
import { UserId } from "./Ids.js"
import { all, maxChars, Timestamp } from "./Schemas.js"
import { StorableString } from "./StorableText.js"

export const HandoffStates = ["ai", "waiting", "human"] as const
export const HandoffState = Schema.Literal(...HandoffStates).annotations({
  identifier: "HandoffState",
  description:
    "`ai`: the agent replies. `waiting`: a person was asked for; the agent is silent. `human`: an operator has it; the agent is silent."
})
export type HandoffState = typeof HandoffState.Type

/** Who asked for a person. */
export const HandoffRequester = Schema.Literal("contact", "ai", "operator", "rule")
export type HandoffRequester = typeof HandoffRequester.Type

/** Who made a transition: a requester, or the system (a timeout, a resolution). */
export const HandoffActor = Schema.Literal("contact", "ai", "operator", "rule", "system")
export type HandoffActor = typeof HandoffActor.Type

/** The moves an operator (or integration) asks for; `timeout` and `resolve` are made by the system. */
export const HandoffActions = ["request", "take", "assign", "return"] as const
export const HandoffAction = Schema.Literal(...HandoffActions)
export type HandoffAction = typeof HandoffAction.Type

export const HandoffEventAction = Schema.Literal("request", "take", "assign", "return", "timeout", "resolve")
export type HandoffEventAction = typeof HandoffEventAction.Type

/** A conversation's handoff, as every surface shows it. */
export class Handoff extends Schema.Class<Handoff>("Handoff")({
  state: HandoffState,
  requested_at: Schema.NullOr(Timestamp),
  requested_by: Schema.NullOr(HandoffRequester),
  reason: Schema.NullOr(Schema.String),
  summary: Schema.NullOr(Schema.String).annotations({
    description: "What the contact wants, what was tried, open questions: written when a person is asked for"
  }),
  assignee_id: Schema.NullOr(UserId),
  taken_at: Schema.NullOr(Timestamp),
  returned_at: Schema.NullOr(Timestamp),
  return_note: Schema.NullOr(Schema.String).annotations({
    description: "The operator's note on handing back; the agent reads it as context for its next replies"
  }),
  due_at: Schema.NullOr(Timestamp).annotations({
    description: "While `waiting`: when the pipeline's `handoff_timeout_seconds` runs out"
  })
}) {}

/** One transition, as the conversation's handoff history keeps it. */
export class HandoffEvent extends Schema.Class<HandoffEvent>("HandoffEvent")({
  id: Schema.Number,
  action: HandoffEventAction,
  from_state: HandoffState,
  to_state: HandoffState,
  actor: HandoffActor,
  user_id: Schema.NullOr(UserId),
  assignee_id: Schema.NullOr(UserId),
  reason: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String),
  created_at: Timestamp
}) {}

const Reason = StorableString.pipe(maxChars(1000, { message: () => "may not be greater than 1000 characters" }))
const Note = StorableString.pipe(maxChars(4000, { message: () => "may not be greater than 4000 characters" }))

/** `POST /api/user/conversations/{id}/handoff`. */
export const HandoffCommand = Schema.Struct({
  action: Schema.propertySignature(HandoffAction).annotations({
    description:
      "`request` a person (from `ai`), `take` it yourself (from `ai` or `waiting`), `assign` it to a member (any state), `return` it to the agent (from `waiting` or `human`)"
  }),
  reason: Schema.optional(Reason).annotations({ description: "`request`: why a person is needed" }),
  note: Schema.optional(Note).annotations({ description: "`return`: context the agent reads for its next replies" }),
  assignee_id: Schema.optional(UserId).annotations({
    description: "`assign`: a member of the conversation's workspace"
  })
}).annotations({ ...all, identifier: "HandoffCommand" })
export type HandoffCommand = typeof HandoffCommand.Type

/** What a contact is told when a person is asked for, unless the pipeline says otherwise. */
export const DEFAULT_BRIDGE_TEXT =
  "I'm bringing in a member of our team to help with this. They will reply here shortly."

/** What the contact is told when a reply cannot be made (a pipeline's `fallback_message` when null). */
export const DEFAULT_FALLBACK_MESSAGE =
  "Sorry, I could not answer that just now. A member of our team will get back to you."
/** The second bridge message, when the wait outlasts the pipeline's timeout (`second_bridge`). */
export const DEFAULT_SECOND_BRIDGE_TEXT =
  "Thank you for waiting. Our team has your conversation and will reply here as soon as they can."

/** The pipeline's handoff settings. */
export const HandoffBridgeMode = Schema.Literal("static", "ai_generated")
export type HandoffBridgeMode = typeof HandoffBridgeMode.Type
export const HandoffTimeoutAction = Schema.Literal("return", "second_bridge")
export type HandoffTimeoutAction = typeof HandoffTimeoutAction.Type

/** A move and who makes it. `by` is the operator's user id for operator moves. */
export type HandoffMove =
  /** `bridgeText`: what the contact is told instead of the pipeline's bridge message (a failed reply's fallback) */
  | {
    readonly action: "request"
    readonly actor: HandoffRequester
    readonly reason: string | null
    readonly bridgeText?: string | null
  }
  | { readonly action: "take"; readonly userId: number }
  | { readonly action: "assign"; readonly userId: number; readonly assigneeId: number }
  | {
    readonly action: "return"
    readonly actor: "operator" | "system"
    readonly userId: number | null
    readonly note: string | null
  }
  | { readonly action: "timeout"; readonly then: HandoffTimeoutAction }
  | { readonly action: "resolve" }

/**
 * The state a move leads to from `from` (with `assignee`, the operator who has it), or why it does not
 * apply: the one table of docs/handoff.md.
 */
export const handoffTarget = (
  from: HandoffState,
  assignee: number | null,
  move: HandoffMove
): { readonly to: HandoffState } | { readonly conflict: string } => {
  switch (move.action) {
    case "request":
      return from === "ai"
        ? { to: "waiting" }
        : {
          conflict: from === "waiting"
            ? "A person was already asked for in this conversation."
            : "An operator already has this conversation."
        }
    case "take":
      return from === "human"
        ? {
          conflict: assignee === move.userId
            ? "You already have this conversation."
            : "An operator already has this conversation; assign it instead."
        }
        : { to: "human" }
    case "assign":
      return from === "human" && assignee === move.assigneeId
        ? { conflict: "The conversation is already assigned to that user." }
        : { to: "human" }
    case "return":
      return from === "ai" ? { conflict: "The agent already has this conversation." } : { to: "ai" }
    case "timeout":
      return from === "waiting"
        ? { to: move.then === "return" ? "ai" : "waiting" }
        : { conflict: "The conversation is no longer waiting." }
    case "resolve":
      return from === "ai" ? { conflict: "The agent already has this conversation." } : { to: "ai" }
  }
}

/** SPEC.md's `status` for a handoff state: an operator's conversation is paused. */
export const statusOfHandoff = (state: HandoffState): "active" | "paused" => state === "human" ? "paused" : "active"

/**
 * The first of a pipeline's `handoff_keywords` that the contact's latest messages contain (case and
 * accents ignored, whole words or phrases), or null.
 */
export const handoffKeywordIn = (
  keywords: ReadonlyArray<string>,
  contactTexts: ReadonlyArray<string>
): string | null => {
  const fold = (t: string) =>
    ` ${t.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "").replace(/[^\p{L}\p{N}]+/gu, " ").trim()} `
  const said = fold(contactTexts.join(" "))
  return keywords.find((k) => fold(k).trim() !== "" && said.includes(fold(k))) ?? null
}
