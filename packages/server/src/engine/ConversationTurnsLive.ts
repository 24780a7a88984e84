/**
 * The conversation entity's reads and writes over the application tables (the `ConversationTurns`
 * port). Each write is one transaction and idempotent: the reply is unique per contact message it
 * answers (`in_reply_to`), an opening message per stage entry.
 */
import { SqlClient } from "@effect/sql"
import {
  ConversationTurns,
  type FailReason,
  FollowupTurns,
  handoffKeywordIn,
  type ModelRef,
  OpeningTurns,
  type PendingWork,
  type Prepared,
  type ReplyDraft,
  type SkipReason,
  TurnDeliveries
} from "@parley/domain"
import { repliesMade } from "@parley/worker"
import { Clock, Context, Effect, Layer, Metric, Option } from "effect"
import { enqueueToolCalls } from "../actions/ActionRunsEnqueue.js"
import { ProviderTyping } from "../channels/ProviderTyping.js"
import { windowClosed } from "../channels/ServiceWindow.js"
import { Handoff } from "../handoff/Handoff.js"
import { Knowledge } from "../knowledge/Knowledge.js"
import { MessagesRepo } from "../messages/MessagesRepo.js"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { Realtime } from "../realtime/Realtime.js"
import { makeFollowupTurns } from "./FollowupTurns.js"
import { HandoffRulesRepo } from "./HandoffRulesRepo.js"
import { ModelKeys } from "./ModelKeys.js"
import { StageEntryRepo } from "./StageEntryRepo.js"
import { makeStageEntryTurns } from "./StageEntryTurns.js"
import { makeContextFrom, makeSnapshotContext, type SnapshotWithContext } from "./TurnContextFrom.js"
import { makeTurnDelivery } from "./TurnDelivery.js"
import { draftColumns, hasEffects, storedId } from "./TurnDrafts.js"
import { makeTurnHandoffRules } from "./TurnHandoffRules.js"
import { TurnMedia } from "./TurnMedia.js"
import { TurnsRepo } from "./TurnsRepo.js"
import { makeStageMove } from "./TurnStageMove.js"

export const ConversationTurnsLive = Layer.effectContext(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const realtime = yield* Realtime
    const repo = yield* TurnsRepo
    const knowledge = yield* Knowledge
    const modelKeys = yield* ModelKeys
    const typing = yield* ProviderTyping
    const handoff = yield* Handoff
    const { failureRule, turnHandoff, turnTexts } = yield* makeTurnHandoffRules
    const { deliver, undelivered } = yield* makeTurnDelivery
    const moveStage = yield* makeStageMove
    const contextFrom = makeContextFrom(knowledge, turnHandoff, yield* TurnMedia)
    const snapshotContext = makeSnapshotContext(repo.snapshot, contextFrom)
    const stageEntries = yield* makeStageEntryTurns(snapshotContext)
    const followups = yield* makeFollowupTurns(snapshotContext)

    const skipped = (isEval: boolean) => (reason: SkipReason, detail?: string): Prepared => ({
      _tag: "Skip",
      reason,
      isEval,
      ...(detail === undefined ? {} : { detail })
    })

    /** Whether the agent answers this turn (and with what context), or the reason it does not, from its snapshot. */
    const decide = Effect.fn("ConversationTurns.prepare")(function*(
      conversationId: string,
      upTo: string,
      found: Option.Option<SnapshotWithContext>
    ) {
      if (Option.isNone(found)) return skipped(false)("closed")
      const { ready, snap: c } = found.value
      const skipTurn = skipped(c.is_eval)
      if (Option.isNone(ready)) return skipTurn("no_agent")
      const { context, pipeline: p } = ready.value
      if (p.status !== "active" || p.is_archived) return skipTurn("no_agent")
      if (c.status === "paused" || c.opportunity_status === "paused" || c.handoff_state === "human") {
        return skipTurn("paused")
      }
      if (c.handoff_state === "waiting") return skipTurn("waiting_for_person")
      // this turn's own messages: those handled while waiting or handed back are never read again
      const keyword = p.handoff_keywords.length === 0
        ? null
        : handoffKeywordIn(p.handoff_keywords, yield* turnTexts(conversationId, upTo))
      if (keyword !== null && context.handoff?.canRequest === true) {
        yield* handoff.moveAsSystem(c.id, {
          action: "request",
          actor: "rule",
          reason: `The contact wrote "${keyword}"`
        })
          .pipe(Effect.catchAll((e) => Effect.logWarning("The keyword rule could not ask for a person", e)))
        return skipTurn("waiting_for_person", `keyword rule: "${keyword}"`)
      }
      // a provider that allows free-form messages only within a window after the contact's latest message
      if (windowClosed(c, yield* Clock.currentTimeMillis)) {
        return skipTurn("outside_service_window")
      }
      // the rule Initiate refuses a conversation by (SPEC.md 4.4), applied to each reply
      if (!c.is_subscription_active) return skipTurn("no_subscription")
      // a workspace's own provider set not to spend credits answers on an empty balance
      if (!(c.credits > 0) && context.model.chargeCredits !== false) return skipTurn("no_credits")
      if (p.max_conversation_messages !== null && c.ai_replies >= p.max_conversation_messages) {
        return skipTurn("message_limit")
      }
      if (p.max_conversation_cost !== null && c.cost >= p.max_conversation_cost) return skipTurn("cost_limit")
      const unusable = [context.model, ...(context.routing ?? []).map((t) => t.model)].flatMap((m) => {
        const key = modelKeys.missingKey({
          provider: m.provider,
          kind: m.kind ?? m.provider,
          has_key: m.hasKey === true
        })
        return key === null ? [] : [`the model ${m.model} needs ${key}, which is not set`]
      })
      if (unusable.length > 0) return skipTurn("model_not_configured", [...new Set(unusable)].join("; "))
      // the visitor's chat shows that an answer is coming; the reply's new_message ends it. An eval's sandbox
      // tells nobody (docs/evals.md): the operators' socket hears nothing of it
      if (!c.is_eval) {
        yield* realtime.typing(Number(c.id), c.workspace_id, true)
        if (c.contact_sent_at_ms !== null) yield* typing.composing(upTo)
      }
      return { _tag: "Ready", context } satisfies Prepared
    })

    const prepare = (conversationId: string, upTo: string) =>
      Effect.flatMap(snapshotContext(conversationId, upTo), (found) => decide(conversationId, upTo, found))

    /**
     * What the conversation has waiting, in one read: when its newest contact message is due by the database's clock
     * (and no reply is left to deliver first), the turn is decided from the snapshot read with it.
     */
    const pending = Effect.fn("ConversationTurns.pending")(function*(conversationId: string) {
      const { pending: row, snapshot: snap } = yield* repo.pendingTurn(conversationId)
      if (row.latest_id === null) return { turn: Option.none(), undelivered: row.undelivered } satisfies PendingWork
      const upTo = row.latest_id
      const prepared = Option.isSome(snap) && row.undelivered.length === 0
        ? Option.some(
          yield* decide(
            conversationId,
            upTo,
            Option.some({ snap: snap.value, ready: yield* contextFrom(snap.value, upTo, true) })
          )
        )
        : Option.none<Prepared>()
      return {
        turn: Option.some({
          latestMessageId: upTo,
          latestAt: new Date(row.latest_at!),
          debounceMs: row.debounce_ms ?? 0,
          prepared
        }),
        undelivered: row.undelivered
      } satisfies PendingWork
    })

    /** A stored reply's effects: a stage move, a handoff, action calls, knowledge use (in the reply's transaction). */
    const applyEffects = Effect.fn("ConversationTurns.applyEffects")(
      function*(conversationId: string, upTo: string, draft: ReplyDraft) {
        const c = Option.getOrThrow(yield* repo.conversation(conversationId))
        // the turn's configuration; a draft without it gets what runs now, as this read resolved it
        const version = draft.configVersion ?? c.config_version
        if (draft.moveToStageId !== null) yield* moveStage(c, draft.moveToStageId, version)
        if (draft.handoffReason !== undefined && draft.handoffReason !== null) {
          yield* handoff.moveAsSystem(c.id, {
            action: "request",
            actor: "ai",
            reason: draft.handoffReason
          }).pipe(
            Effect.catchTags({
              HandoffConflict: Effect.logWarning,
              ConversationNotFound: Effect.logWarning,
              Unprocessable: Effect.logWarning
            })
          )
        }
        if (draft.actionCalls !== undefined && draft.actionCalls.length > 0) {
          yield* enqueueToolCalls(sql, {
            workspaceId: c.workspace_id,
            pipelineId: c.opportunity_pipeline_id ?? c.channel_pipeline_id,
            conversationId: c.id,
            opportunityId: c.opportunity_id,
            stageId: c.opportunity_stage_id,
            messageId: upTo,
            version
          }, draft.actionCalls)
        }
        yield* knowledge.recordUsage(draft.knowledgePointIds)
      }
    )

    /**
     * A reply alone is one statement (stored, charged, the turn marked handled: it answers the turn's
     * newest contact message); one with effects runs them in the same transaction, only when this run
     * stored it (a repeat after a crash applies nothing twice).
     */
    const commit = Effect.fn("ConversationTurns.commit")(
      function*(conversationId: string, upTo: string, draft: ReplyDraft) {
        const store = repo.storeReply({ ...draftColumns(conversationId, upTo, draft, "ai"), upTo })
        const stored = yield* (hasEffects(draft)
          ? sql.withTransaction(
            Effect.tap(store, (r) => r.stored_id === null ? Effect.void : applyEffects(conversationId, upTo, draft))
          )
          : store).pipe(Effect.orDie)
        // a turn repeated after a crash finds its reply stored: counted once, when it was stored; an eval's not at all
        if (stored.stored_id !== null && stored.is_eval !== true) {
          yield* Metric.increment(repliesMade)
        }
        return storedId(stored)
      }
    )

    /** The failed reply (`status: failed`, `error`) and the turn handled with the reason, then the failure rule. */
    const fail = Effect.fn("ConversationTurns.fail")(
      function*(conversationId: string, upTo: string, reason: FailReason, error: string, model: ModelRef | null) {
        const empty: ReplyDraft = {
          text: "",
          model,
          inputTokens: 0,
          outputTokens: 0,
          cost: 0,
          tier: null,
          moveToStageId: null,
          knowledgePointIds: []
        }
        const stored = yield* sql.withTransaction(Effect.gen(function*() {
          const stored = yield* repo.storeReply({
            ...draftColumns(conversationId, upTo, empty, "ai"),
            upTo,
            reason,
            status: "failed",
            text: null,
            error: error.slice(0, 2000)
          })
          yield* failureRule(conversationId, error.split("\n", 1)[0]!.slice(0, 300))
          return stored
        })).pipe(Effect.orDie)
        if (stored.workspace_id !== null && stored.is_eval !== true) {
          yield* realtime.typing(Number(conversationId), stored.workspace_id, false)
        }
      }
    )

    const context = (conversationId: string) =>
      Effect.map(
        snapshotContext(conversationId, null, false),
        (found) => Option.flatMap(found, ({ ready }) => Option.map(ready, (r) => r.context))
      )

    // one engine, four ports by job: replies, their delivery, openings and followup steps
    return Context.make(ConversationTurns, {
      context,
      pending,
      orphaned: repo.orphaned,
      prepare,
      skip: repo.markHandled,
      commit,
      fail
    }).pipe(
      Context.add(TurnDeliveries, { undelivered, deliver }),
      Context.add(OpeningTurns, stageEntries),
      Context.add(FollowupTurns, followups)
    )
  })
).pipe(
  Layer.provide([
    ModelKeys.Default,
    TurnMedia.Default,
    TurnsRepo.Default,
    StageEntryRepo.Default,
    OpportunitiesRepo.Default,
    HandoffRulesRepo.Default,
    MessagesRepo.Default
  ])
)
