/** What a turn stores, as TurnsRepo.storeReply's columns: pure helpers shared by replies, openings and followups. */
import { type ReplyDraft, ulid } from "@parley/domain"
import { Option } from "effect"
import type { StoreReply } from "./TurnsRepo.js"

/** A produced message's columns (stored before it is delivered), answering `inReplyTo`. */
export const draftColumns = (
  conversationId: string,
  inReplyTo: string,
  draft: ReplyDraft,
  callType: "ai" | "opening" | "followup"
): StoreReply => ({
  id: ulid(),
  conversationId,
  inReplyTo,
  upTo: null,
  reason: "replied",
  status: "ai_generated",
  text: draft.text,
  modelId: draft.model?.id ?? null,
  model: draft.model?.model ?? null,
  inputTokens: draft.inputTokens,
  outputTokens: draft.outputTokens,
  cost: draft.cost,
  // a workspace's own provider may be set not to spend its credits: the cost is still recorded
  charge: draft.model?.chargeCredits === false ? 0 : draft.cost,
  error: null,
  callType,
  followupSequenceId: null,
  followupStep: null,
  template: draft.template ?? null,
  citations: draft.citations ?? null
})

/** The stored message's id: this run's, or the one an earlier run stored. */
export const storedId = (r: { readonly stored_id: string | null; readonly existing_id: string | null }) =>
  Option.fromNullable(r.stored_id ?? r.existing_id)

/** One key per followup sequence step: a step repeated after a crash finds its followup stored. */
export const followupKey = (sequenceId: number, step: number) => `followup:${sequenceId}:${step}`

/** What a reply does beyond being stored: a stage move, a handoff, action calls, knowledge use. */
export const hasEffects = (draft: ReplyDraft) =>
  draft.moveToStageId !== null || (draft.handoffReason !== undefined && draft.handoffReason !== null) ||
  (draft.actionCalls !== undefined && draft.actionCalls.length > 0) || draft.knowledgePointIds.length > 0
