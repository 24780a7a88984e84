/**
 * The per-conversation entity (ARCHITECTURE.md, "the path of one inbound message"). Everything that
 * happens to one conversation is a message to its entity, handled one at a time, so two replies of one
 * conversation never overlap. Messages are persisted before the sender goes on, and a message counts as
 * done only when its handler returns: a restart redelivers whatever was not finished.
 *
 * - `Inbound`: a contact's message was stored. The entity waits until the conversation has been quiet
 *   for the pipeline's debounce window (a burst gets one reply), then takes every unanswered message up
 *   to the newest in one turn: skip (and why), or reply, store, charge, deliver. The wait is derived
 *   from stored timestamps, so after a crash the redelivered message waits only what is left.
 * - `StageEntered`: the opportunity entered a stage with an opening message: send it, once.
 * - `Handoff`: a person was asked for: send the contact the bridge message, write the operator's summary.
 * - `Followup`: a step of a followup sequence is due: unless the contact wrote since the sequence began
 *   (or the sequence is otherwise over), write, store and send the followup, once per step.
 *
 * Exactly once: the reply is stored with the contact message it answers (unique), in the transaction
 * that marks the turn handled; a turn repeated after a crash finds it stored and only delivers what was
 * stored but not yet delivered.
 */
import { ClusterSchema, Entity, Singleton } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import {
  ConversationTurns,
  FollowupOutcome,
  FollowupTurns,
  HandoffTurns,
  type NoReplyReason,
  noReplySentence,
  OpeningTurns,
  type Prepared,
  type ReplyDraft,
  type TemplateSend,
  TurnDeliveries
} from "@parley/domain"
import {
  Cause,
  Clock,
  Duration,
  Effect,
  Layer,
  Metric,
  MetricBoundaries,
  Option,
  Schedule,
  Schema,
  Stream
} from "effect"
import * as Agent from "./agent/Agent.js"
import type { ModelRegistry } from "./agent/Models.js"
import { startFollowups } from "./FollowupWorkflow.js"

export const Conversation = Entity.make("Conversation", [
  /**
   * Not persisted: the contact's message row is itself the durable record, and the hand-over sweep
   * (below) re-sends what a crash left unhandled or undelivered. Persisting it cost a reply three
   * storage writes and a read of the cluster's message storage.
   */
  Rpc.make("Inbound", {
    payload: { messageId: Schema.String },
    primaryKey: ({ messageId }) => messageId
  }),
  Rpc.make("StageEntered", {
    payload: { entryId: Schema.Number },
    primaryKey: ({ entryId }) => `stage-entry:${entryId}`
  }).annotate(ClusterSchema.Persisted, true),
  Rpc.make("Followup", {
    // a step asked again after it re-armed or paused is a request of its own (`round`)
    payload: { sequenceId: Schema.Number, step: Schema.Number, round: Schema.optional(Schema.Number) },
    success: FollowupOutcome,
    primaryKey: ({ round, sequenceId, step }) =>
      round === undefined || round === 0 ? `followup:${sequenceId}:${step}` : `followup:${sequenceId}:${step}:${round}`
  }).annotate(ClusterSchema.Persisted, true),
  /** A handoff event (docs/handoff.md): the contact's bridge message and the operator's summary, once. */
  Rpc.make("Handoff", {
    payload: { eventId: Schema.Number },
    primaryKey: ({ eventId }) => `handoff:${eventId}`
  }).annotate(ClusterSchema.Persisted, true)
])

/** Turns that made no reply, tagged `reason` with the public code (`no_credits`, `provider_error`, ...). */
export const repliesSkipped = Metric.counter("parley_replies_skipped_total", {
  description: "Contact messages the agent made no reply to, by reason",
  incremental: true
})

/** Replies the agent wrote and stored for delivery (counted once per reply, by the commit that stores it). */
export const repliesMade = Metric.counter("parley_replies_made_total", {
  description: "Replies the agent made to contact messages",
  incremental: true
})

/** From the newest contact message of a turn (its arrival) to its reply being stored: debounce included. */
export const replyLatency = Metric.histogram(
  "parley_reply_latency_seconds",
  MetricBoundaries.fromIterable([0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120]),
  "Time from a contact message's arrival to the agent's reply being stored"
)

/** Followup steps by outcome: `sent`, or why not (`skipped`, `contact_replied`, `limit_reached`, ...). */
export const followupSteps = Metric.counter("parley_followup_steps_total", {
  description: "Followup steps that came due, by outcome",
  incremental: true
})

/**
 * The Warning and the count of a turn that made no reply (an eval's sandbox is not counted: the metrics are
 * about contacts); the reason itself is stored on the contact messages.
 */
const noReply = (conversationId: string, isEval: boolean, reason: NoReplyReason, detail?: string) =>
  Effect.logWarning(`No reply in conversation ${conversationId}: ${reason} (${detail ?? noReplySentence[reason]})`)
    .pipe(
      Effect.annotateLogs({ conversation_id: conversationId, reason }),
      Effect.zipRight(isEval ? Effect.void : Metric.increment(Metric.tagged(repliesSkipped, "reason", reason)))
    )

const describe = (error: unknown) =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? error.message
    : String(error)

export const ConversationLive = Conversation.toLayer(
  Effect.gen(function*() {
    const turns = yield* ConversationTurns
    const deliveries = yield* TurnDeliveries
    const openings = yield* OpeningTurns
    const followups = yield* FollowupTurns
    const handoffs = yield* HandoffTurns
    const context = yield* Effect.context<ModelRegistry>()
    const conversationId = (yield* Entity.CurrentAddress).entityId

    /** Replies stored by an earlier, interrupted run of this entity go out first. */
    const deliverLeftovers = deliveries.undelivered(conversationId).pipe(
      Effect.flatMap(Effect.forEach(deliveries.deliver, { discard: true }))
    )

    /** The turn answering every contact message up to `upTo`: decided already with the read that found it, or now. */
    const turn = (upTo: string, arrivedAt: Date, decided: Option.Option<Prepared>) =>
      Effect.gen(function*() {
        const prepared = Option.isSome(decided) ? decided.value : yield* turns.prepare(conversationId, upTo)
        if (prepared._tag === "Skip") {
          yield* turns.skip(conversationId, upTo, prepared.reason)
          // a conversation that is gone has no messages left to explain anything to
          return prepared.reason === "closed"
            ? yield* Effect.logDebug(`No reply in conversation ${conversationId}: it no longer exists`)
            : yield* noReply(conversationId, prepared.isEval, prepared.reason, prepared.detail)
        }
        const draft = yield* Agent.reply(prepared.context).pipe(Effect.either)
        if (draft._tag === "Left") {
          // retried already (Agent's policy): the turn ends here, recorded, instead of being redelivered forever
          const error = describe(draft.left)
          const reason = draft.left._tag === "ModelUnavailable"
            ? "model_not_configured" as const
            : draft.left._tag === "ReplyWithheld"
            ? "reply_withheld" as const
            : "provider_error" as const
          yield* turns.fail(conversationId, upTo, reason, error, prepared.context.model)
          // the first line: the whole provider answer is on the failed reply's `error`
          return yield* noReply(conversationId, prepared.context.isEval, reason, error.split("\n", 1)[0]!.slice(0, 300))
        }
        // counted by the commit, which knows whether this run stored the reply or an earlier, interrupted one did
        const id = yield* turns.commit(conversationId, upTo, draft.right)
        // concurrent turns spent what was left: the reply is not made (SPEC.md 4.4's rule, at the charge)
        if (Option.isNone(id)) return yield* noReply(conversationId, prepared.context.isEval, "no_credits")
        const now = yield* Clock.currentTimeMillis
        if (!prepared.context.isEval) yield* Metric.update(replyLatency, Math.max(0, now - arrivedAt.getTime()) / 1000)
        yield* deliveries.deliver(id.value)
      })

    const inbound = Effect.gen(function*() {
      while (true) {
        const pending = yield* turns.pending(conversationId)
        // replies stored by an earlier, interrupted run go out first
        yield* Effect.forEach(pending.undelivered, deliveries.deliver, { discard: true })
        // an earlier message's turn already answered this one
        if (Option.isNone(pending.turn)) return
        const { debounceMs, latestAt, latestMessageId, prepared } = pending.turn.value
        // due by the database's clock: decided with the read that found it
        if (Option.isSome(prepared)) return yield* turn(latestMessageId, latestAt, prepared)
        const now = yield* Clock.currentTimeMillis
        // capped at the window itself, so a clock skew between database and runner cannot stall a reply
        const wait = Math.min(latestAt.getTime() + debounceMs - now, debounceMs)
        if (wait <= 0) return yield* turn(latestMessageId, latestAt, Option.none())
        yield* Effect.sleep(Duration.millis(wait))
      }
    })

    /** A text that costs nothing: an operator's static opening or bridge, or an approved template's body. */
    const staticDraft = (text: string, template?: TemplateSend): ReplyDraft => ({
      text,
      model: null,
      inputTokens: 0,
      outputTokens: 0,
      cost: 0,
      tier: null,
      moveToStageId: null,
      knowledgePointIds: [],
      ...(template === undefined ? {} : { template })
    })

    const stageEntered = (entryId: number) =>
      Effect.gen(function*() {
        yield* deliverLeftovers
        const due = yield* openings.opening(entryId)
        if (Option.isNone(due)) return
        const o = due.value
        const draft: ReplyDraft | undefined = o.kind === "static"
          ? staticDraft(o.staticText ?? "", o.template)
          : yield* Agent.opening(o.context).pipe(
            Effect.tapError((e) => Effect.logWarning("The opening message could not be produced", e)),
            Effect.orElseSucceed(() => undefined)
          )
        if (draft === undefined || draft.text.trim() === "") return
        const id = yield* openings.commitOpening(conversationId, entryId, draft)
        if (Option.isSome(id)) yield* deliveries.deliver(id.value)
      })

    const followup = (sequenceId: number, step: number) =>
      Effect.gen(function*() {
        yield* deliverLeftovers
        const due = yield* followups.followup(sequenceId, step)
        if (due._tag === "Skip") return due.outcome
        const draft = due._tag === "Template" ? staticDraft(due.text, due.template) : yield* Agent.followup(
          due.followup
        ).pipe(
          Effect.tapError((e) => Effect.logWarning("The followup could not be produced", e)),
          Effect.orElseSucceed(() => undefined)
        )
        if (draft === undefined || draft.text.trim() === "") return "skipped" as const
        const id = yield* followups.commitFollowup(conversationId, sequenceId, step, draft)
        if (Option.isNone(id)) return "skipped" as const
        yield* deliveries.deliver(id.value)
        return "sent" as const
      })

    const handoff = (eventId: number) =>
      Effect.gen(function*() {
        yield* deliverLeftovers
        const due = yield* handoffs.due(eventId)
        if (Option.isNone(due)) return
        const { bridge, summary } = due.value
        if (bridge !== null) {
          const draft = bridge.kind === "static"
            ? staticDraft(bridge.text, bridge.template)
            : yield* Agent.bridge(bridge.context, bridge.second).pipe(
              Effect.filterOrFail((d) => d.text.trim() !== ""),
              Effect.tapError((e) =>
                Effect.logWarning("The bridge message could not be written; the pipeline's text goes instead", e)
              ),
              Effect.orElseSucceed(() => staticDraft(bridge.fallback))
            )
          // a written bridge the credits cannot pay for gives way to the pipeline's text, which costs nothing
          const id = yield* Effect.flatMap(
            handoffs.commitBridge(eventId, draft),
            (id) =>
              Option.isSome(id) || draft.cost <= 0
                ? Effect.succeed(id)
                : handoffs.commitBridge(eventId, staticDraft(bridge.kind === "static" ? bridge.text : bridge.fallback))
          )
          if (Option.isSome(id)) yield* deliveries.deliver(id.value)
        }
        if (summary !== null) {
          const text = yield* Agent.summarise(summary).pipe(
            Effect.tapError((e) => Effect.logWarning("The handoff summary could not be written", e)),
            Effect.orElseSucceed(() => "")
          )
          if (text !== "") yield* handoffs.storeSummary(eventId, text)
        }
      })

    // a defect in one turn is logged and the message counts as handled: redelivering it would repeat the defect forever
    const guarded = <E>(name: string, effect: Effect.Effect<void, E, ModelRegistry>) =>
      effect.pipe(
        Effect.provide(context),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError(`${name} failed`, cause)
        ),
        Effect.withSpan(`Conversation.${name}`, { attributes: { conversationId } })
      ) as Effect.Effect<void>

    return {
      Inbound: () => guarded("Inbound", inbound),
      StageEntered: ({ payload }) => guarded("StageEntered", stageEntered(payload.entryId)),
      Handoff: ({ payload }) => guarded("Handoff", handoff(payload.eventId)),
      // a defect leaves the step unsent; the sequence goes on
      Followup: ({ payload }) =>
        followup(payload.sequenceId, payload.step).pipe(
          Effect.tap((outcome) => Metric.increment(Metric.tagged(followupSteps, "outcome", outcome))),
          Effect.provide(context),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.as(Effect.logError("Followup failed", cause), "skipped" as const)
          ),
          Effect.withSpan("Conversation.Followup", { attributes: { conversationId, ...payload } })
        )
    }
  }),
  { maxIdleTime: "2 minutes" }
)

/**
 * The receiver hands each message over right after its commit, and the hand-over is not persisted.
 * Should the process die in between, or the runner holding the conversation die during its turn or
 * before delivering what the turn stored, this sweep (one runner of the cluster runs it, every `every`)
 * hands over what was left behind once it is `grace` overdue. A turn finds the message handled, or its
 * reply stored, and does only what is left, so a hand-over twice never makes a second reply.
 */
export const OrphanSweepLive = (every: Duration.DurationInput, grace: Duration.DurationInput) =>
  Singleton.make(
    "Conversation/orphan-sweep",
    Effect.gen(function*() {
      const turns = yield* ConversationTurns
      const client = yield* Conversation.client
      const sweep = turns.orphaned(Duration.toMillis(grace)).pipe(
        Effect.flatMap(Effect.forEach(({ conversationId, messageId }) =>
          client(conversationId).Inbound({ messageId }, { discard: true }).pipe(Effect.ignoreLogged)
        )),
        Effect.catchAllCause(Effect.logWarning)
      )
      yield* Effect.repeat(sweep, Schedule.spaced(every))
    })
  )

/**
 * Stage-entry automations: every stage entry (the outbox the opportunity writes, SPEC.md 3.1) is
 * consumed once. It is handed to its conversation's entity (primary key = entry, so a repeat after a
 * crash is the same request) and then marked consumed. Later automations hang off the same consumer.
 */
export const StageEntriesLive = (every: Duration.DurationInput) =>
  Singleton.make(
    "Conversation/stage-entries",
    Effect.gen(function*() {
      const openings = yield* OpeningTurns
      const client = yield* Conversation.client
      const drain = openings.stageEntries(100).pipe(
        Effect.flatMap(Effect.forEach(({ conversationId, entryId }) =>
          Effect.gen(function*() {
            if (conversationId !== null) yield* client(conversationId).StageEntered({ entryId }, { discard: true })
            yield* startFollowups(entryId)
            yield* openings.consumeStageEntry(entryId)
          }), { discard: true })),
        Effect.catchAllCause(Effect.logWarning)
      )
      // at once when the database says entries were written, and every `every` in case a notification was missed
      yield* Stream.merge(openings.stageEntriesWritten, Stream.tick(every)).pipe(
        Stream.buffer({ capacity: 1, strategy: "sliding" }),
        Stream.runForEach(() => drain)
      )
    })
  )

/** The entity, the hand-over sweep and the stage-entry consumer. */
export const ConversationEngineLive = (options: {
  readonly handoverEvery: Duration.DurationInput
  readonly handoverGrace: Duration.DurationInput
  readonly stageEntriesEvery: Duration.DurationInput
}) =>
  Layer.mergeAll(
    ConversationLive,
    OrphanSweepLive(options.handoverEvery, options.handoverGrace),
    StageEntriesLive(options.stageEntriesEvery)
  )
