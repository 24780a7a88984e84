/**
 * The entity's side of a handoff event (the `HandoffTurns` port): what the event asks for (a bridge
 * message, a summary), storing the bridge once per event (`messages.handoff_event_id` is unique) and charging
 * it like any agent message, and storing the summary on the handoff and in the conversation's notes.
 */
import { SqlClient } from "@effect/sql"
import {
  ConversationTurns,
  DEFAULT_BRIDGE_TEXT,
  DEFAULT_SECOND_BRIDGE_TEXT,
  type HandoffDue,
  HandoffTurns,
  type ReplyDraft,
  ulid
} from "@parley/domain"
import { Clock, Data, Effect, Layer, Option } from "effect"
import { windowClosed } from "../channels/ServiceWindow.js"
import { ChannelTemplates } from "../channels/Templates.js"
import { HandoffRepo } from "../handoff/HandoffRepo.js"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { BridgeRepo } from "./BridgeRepo.js"

class Unpaid extends Data.TaggedError("Unpaid") {}

export const HandoffTurnsLive = Layer.effect(
  HandoffTurns,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const turns = yield* ConversationTurns
    const repo = yield* HandoffRepo
    const identity = yield* IdentityRepo
    const bridges = yield* BridgeRepo
    const templates = yield* ChannelTemplates

    const due = (eventId: number) =>
      Effect.gen(function*() {
        const found = yield* bridges.dueEvent(eventId)
        if (Option.isNone(found)) return Option.none<HandoffDue>()
        const e = found.value
        const conversationId = String(e.conversation_id)
        const bridgeDue = e.bridge !== null && e.bridge_message === null && e.latest
        const context = bridgeDue || e.summary_due ? yield* turns.context(conversationId) : Option.none()
        const fallback = e.bridge === "second" ? DEFAULT_SECOND_BRIDGE_TEXT : e.bridge_text ?? DEFAULT_BRIDGE_TEXT
        // a provider's window closed: only the pipeline's approved template may tell the contact to wait
        const closed = bridgeDue &&
          windowClosed(e, yield* Clock.currentTimeMillis)
        const template = closed && e.bridge_template !== null
          ? yield* templates.resolveForSend(conversationId, e.bridge_template, "The handoff bridge")
          : Option.none()
        const bridge: HandoffDue["bridge"] = !bridgeDue
          ? null
          : closed
          ? Option.match(template, {
            onNone: () => null,
            onSome: (t) => ({ kind: "static", text: t.text, template: t.send })
          })
          : e.bridge_mode === "ai_generated" && Option.isSome(context)
          ? { kind: "ai_generated", second: e.bridge === "second", fallback, context: context.value }
          : { kind: "static", text: fallback }
        return Option.some<HandoffDue>({
          conversationId,
          bridge,
          summary: e.summary_due ? Option.getOrNull(context) : null
        })
      })

    /** The bridge, as an agent message of the conversation (its opportunity, stage and channel), charged like any. */
    const commitBridge = (eventId: number, draft: ReplyDraft) =>
      sql.withTransaction(Effect.gen(function*() {
        const earlier = yield* bridges.bridgeOf(eventId)
        if (Option.isSome(earlier)) return Option.some(earlier.value)
        const id = ulid()
        const charged = yield* bridges.insertBridge({
          id,
          eventId,
          text: draft.text,
          cost: draft.cost,
          aiModelId: draft.model?.id ?? null,
          model: draft.model?.model ?? null,
          inputTokens: draft.inputTokens,
          outputTokens: draft.outputTokens,
          template: draft.template ?? null
        })
        // rolled back when the credits do not cover it
        if (Option.isSome(charged) && draft.cost > 0 && !(yield* identity.spendCredits(charged.value, draft.cost))) {
          return yield* new Unpaid()
        }
        return Option.some(id)
      })).pipe(Effect.catchTag("Unpaid", () => Effect.succeedNone), Effect.orDie)

    return HandoffTurns.of({ due, commitBridge, storeSummary: repo.storeSummary })
  })
).pipe(Layer.provide([HandoffRepo.Default, BridgeRepo.Default, IdentityRepo.Default]))
