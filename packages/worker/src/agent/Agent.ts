/**
 * How a reply is produced: Smart Routing picks the model (the router tier classifies the contact's
 * message, that tier's model answers with that tier's instructions), then a bounded tool loop runs
 * (model call, tool results back, final text). Tools only record what they would do; the turn applies
 * it together with the stored reply, so a repeated turn never applies anything twice.
 *
 * Provider failures are retried with backoff; what still fails is the caller's to record.
 */
import { type AiError, type LanguageModel, Prompt } from "@effect/ai"
import {
  type FollowupContext,
  type ModelRef,
  type ReplyDraft,
  type RoutingTier,
  type TurnContext,
  withSources
} from "@parley/domain"
import { Data, Effect, Metric, MetricLabel, Ref, Schedule } from "effect"
import { costOf, ModelRegistry, type ModelUnavailable } from "./Models.js"
import { type GuardTexts, guardTexts, withheldBecause } from "./OutputGuard.js"
import {
  bridgePrompt,
  candidateStages,
  correctionPrompt,
  extractionPrompt,
  followupPrompt,
  openingPrompt,
  parseTier,
  replyPrompt,
  routerPrompt,
  summaryPrompt
} from "./Prompting.js"
import { AgentTools } from "./Tools.js"

/** Model calls in one reply, tool round trips included; the last is made without tools. */
export const MAX_STEPS = 4

interface Tally {
  inputTokens: number
  outputTokens: number
  cost: number
}

const retryPolicy = Schedule.exponential("500 millis", 2).pipe(Schedule.intersect(Schedule.recurs(2)))

/** One model call; transient provider failures are retried (3 calls in all). */
const call = <A>(effect: Effect.Effect<A, AiError.AiError>) => Effect.retry(effect, retryPolicy)

/** Tokens by `provider`, `model` and `direction` (input, output), and their cost in USD by model. */
const modelTokens = Metric.counter("parley_model_tokens_total", {
  description: "Model tokens used, by provider, model and direction",
  incremental: true
})
const modelCost = Metric.counter("parley_model_cost_usd_total", {
  description: "Cost of model calls in USD (catalogue prices), by provider and model",
  incremental: true
})

const count = (
  tally: Tally,
  model: ModelRef,
  usage: { readonly inputTokens: number | undefined; readonly outputTokens: number | undefined }
) => {
  const u = { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 }
  const cost = costOf(model, u)
  tally.inputTokens += u.inputTokens
  tally.outputTokens += u.outputTokens
  tally.cost += cost
  const tags = [MetricLabel.make("provider", model.provider), MetricLabel.make("model", model.model)]
  return Effect.all([
    Metric.incrementBy(
      Metric.taggedWithLabels(modelTokens, [...tags, MetricLabel.make("direction", "input")]),
      u.inputTokens
    ),
    Metric.incrementBy(
      Metric.taggedWithLabels(modelTokens, [...tags, MetricLabel.make("direction", "output")]),
      u.outputTokens
    ),
    Metric.incrementBy(Metric.taggedWithLabels(modelCost, tags), cost)
  ], { discard: true })
}

/** A text the output guard withheld twice (the draft and its one rewrite): not sent; the turn falls back. */
export class ReplyWithheld extends Data.TaggedError("ReplyWithheld")<{ readonly reason: string }> {
  override get message() {
    return `The reply was withheld by the output guard: ${this.reason}`
  }
}

/**
 * Texts the output guard stopped, by what (`reply`, `opening`, `followup`, `bridge`) and `outcome` (`rewritten`,
 * `withheld`).
 */
export const repliesGuarded = Metric.counter("parley_replies_guarded_total", {
  description:
    "Model-written texts the output guard stopped, by kind and outcome (rewritten, or withheld after the rewrite)",
  incremental: true
})

/**
 * The output guard on a written text (OutputGuard.ts): sent as it is, or once rewritten by the model
 * told why, or withheld (`ReplyWithheld`) when the rewrite repeats internal text too.
 */
const guard = <E, R>(
  kind: string,
  texts: GuardTexts,
  text: string,
  rewrite: (reason: string) => Effect.Effect<string, E, R>
) =>
  Effect.gen(function*() {
    const reason = withheldBecause(text, texts)
    if (reason === null) return text
    yield* Effect.logWarning(`The output guard stopped a ${kind}: the draft ${reason}; the model writes it once more`)
    const second = (yield* rewrite(reason)).trim()
    const again = second === "" ? "was empty" : withheldBecause(second, texts)
    const outcome = again === null ? "rewritten" : "withheld"
    yield* Metric.increment(
      Metric.taggedWithLabels(repliesGuarded, [MetricLabel.make("kind", kind), MetricLabel.make("outcome", outcome)])
    )
    if (again === null) return second
    return yield* new ReplyWithheld({ reason: `the draft ${reason}, and the rewrite ${again}` })
  }).pipe(Effect.annotateLogs({ guard: kind }))

type Written = Effect.Effect<ReplyDraft, AiError.AiError | ModelUnavailable | ReplyWithheld, ModelRegistry>

const route = (
  ctx: TurnContext,
  lm: (m: ModelRef) => Effect.Effect<LanguageModel.Service, ModelUnavailable>,
  tally: Tally
) =>
  Effect.gen(function*() {
    const tiers = ctx.routing
    const router = tiers?.find((t) => t.tier === "router")
    if (!tiers || !router) return { model: ctx.model, instructions: null, tier: null as RoutingTier | null }
    const routerModel = yield* lm(router.model)
    const classified = yield* call(
      routerModel.generateText({ prompt: routerPrompt(ctx, router.instructions), toolChoice: "none" })
    )
    yield* count(tally, router.model, classified.usage)
    const tier = parseTier(classified.text) ?? "moderate"
    const chosen = tiers.find((t) => t.tier === tier)
    if (!chosen) return { model: ctx.model, instructions: null, tier: null as RoutingTier | null }
    return { model: chosen.model, instructions: chosen.instructions, tier: tier as RoutingTier | null }
  })

/**
 * The reply to the contact messages at the end of `ctx.history`. When the model fails after its retries and the
 * pipeline names a fallback model, the fallback writes the whole reply again (no routing); the draft's model says
 * which one answered.
 */
export const reply = (ctx: TurnContext): Written => {
  const fallback = ctx.fallbackModel
  if (fallback === undefined || fallback === null || fallback.id === ctx.model.id) return replyWith(ctx)
  return replyWith(ctx).pipe(
    Effect.catchIf(
      (e): e is AiError.AiError => e._tag !== "ModelUnavailable" && e._tag !== "ReplyWithheld",
      (error) =>
        Effect.logWarning(`The model failed after its retries; the fallback model ${fallback.model} answers`, error)
          .pipe(
            Effect.zipRight(replyWith({ ...ctx, model: fallback, routing: null, fallbackModel: null })),
            Effect.withSpan("Agent.fallback", { attributes: { model: fallback.model } })
          )
    )
  )
}

const replyWith = (ctx: TurnContext): Written =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    // the turn's files were described or transcribed before: their cost is the reply's
    const tally: Tally = {
      inputTokens: ctx.mediaUsage?.inputTokens ?? 0,
      outputTokens: ctx.mediaUsage?.outputTokens ?? 0,
      cost: ctx.mediaUsage?.cost ?? 0
    }
    const routed = yield* route(ctx, registry.languageModel, tally)
    const model = yield* registry.languageModel(routed.model)

    const candidates = candidateStages(ctx)
    const moved = yield* Ref.make<number | null>(null)
    const actions = ctx.actions ?? []
    const called = yield* Ref.make<
      ReadonlyArray<{ readonly actionId: number; readonly values: Readonly<Record<string, string>> }>
    >([])
    const canRequest = ctx.handoff?.canRequest === true
    const handoffReason = yield* Ref.make<string | null>(null)
    /** A `from_ai` variable: one short extraction call; what cannot be answered stays empty (unresolved). */
    const extract = (name: string, instruction: string) =>
      call(model.generateText({ prompt: extractionPrompt(ctx, name, instruction), toolChoice: "none" })).pipe(
        Effect.tap((response) => count(tally, routed.model, response.usage)),
        Effect.map((response) => response.text.trim()),
        Effect.tapError((e) => Effect.logWarning("A from_ai variable could not be extracted", e)),
        Effect.orElseSucceed(() => "")
      )
    const handlers = AgentTools.toLayer({
      trigger_action: ({ action_id }) =>
        Effect.gen(function*() {
          const action = actions.find((a) => a.id === action_id)
          if (!action) return { triggered: false, error: `action_id ${action_id} is not one of the listed actions` }
          if ((yield* Ref.get(called)).some((c) => c.actionId === action.id)) {
            return { triggered: true, action: action.name }
          }
          const values: Record<string, string> = {}
          for (const v of action.aiVariables) {
            values[v.name] = yield* extract(v.name, v.instruction)
          }
          yield* Ref.update(called, (all) => [...all, { actionId: action.id, values }])
          return { triggered: true, action: action.name }
        }),
      request_human: ({ reason }) =>
        canRequest
          ? Effect.as(Ref.set(handoffReason, reason.trim().slice(0, 1000) || "The agent asked for a person"), {
            requested: true
          })
          : Effect.succeed({ requested: false, error: "A person cannot be asked for in this conversation now" }),
      move_to_stage: ({ stage_id }) =>
        Effect.gen(function*() {
          const stage = candidates.find((s) => s.id === stage_id)
          if (!stage) return { moved: false, error: `stage_id ${stage_id} is not one of the listed stages` }
          yield* Ref.set(moved, stage.id)
          return { moved: true, stage: stage.name }
        })
    })

    let prompt = replyPrompt(ctx, routed.instructions, routed.model)
    let text = ""
    for (let step = 1; step <= MAX_STEPS; step++) {
      const last = step === MAX_STEPS || (candidates.length === 0 && actions.length === 0 && !canRequest)
      if (last) {
        const response = yield* call(model.generateText({ prompt, toolChoice: "none" }))
        yield* count(tally, routed.model, response.usage)
        text = response.text
        break
      }
      const response = yield* call(model.generateText({ prompt, toolkit: AgentTools }).pipe(Effect.provide(handlers)))
      yield* count(tally, routed.model, response.usage)
      text = response.text
      if (response.toolCalls.length === 0) break
      prompt = Prompt.merge(prompt, Prompt.fromResponseParts(response.content))
    }

    const requested = yield* Ref.get(handoffReason)
    // the reply that goes with a request is the contact's bridge message: the pipeline's text, or the model's
    const written = requested === null || (ctx.handoff?.bridgeMode === "ai_generated" && text.trim() !== "") ||
      ctx.handoff?.bridgeText === undefined
    const checked = written && text.trim() !== ""
      ? yield* guard("reply", guardTexts(ctx, routed.instructions), text.trim(), (reason) =>
        call(model.generateText({ prompt: correctionPrompt(prompt, reason), toolChoice: "none" })).pipe(
          Effect.tap((response) =>
            count(tally, routed.model, response.usage)
          ),
          Effect.map((response) =>
            response.text
          )
        ))
      : text.trim()
    const citations = ctx.knowledge.flatMap((k) => k.citation === undefined ? [] : [k.citation])
    // the sources' lines go after the guard (a URL is no instruction) and with the text, so every channel sends them
    const cited = ctx.citeSources === true && written && checked !== "" ? withSources(checked, citations) : checked
    return {
      text: written ? cited : ctx.handoff!.bridgeText,
      handoffReason: requested,
      model: routed.model,
      inputTokens: tally.inputTokens,
      outputTokens: tally.outputTokens,
      cost: tally.cost,
      tier: routed.tier,
      moveToStageId: yield* Ref.get(moved),
      knowledgePointIds: ctx.knowledge.map((k) => k.pointId),
      citations,
      actionCalls: yield* Ref.get(called),
      ...(ctx.configVersion !== undefined ? { configVersion: ctx.configVersion } : {})
    }
  }).pipe(Effect.withSpan("Agent.reply", { attributes: { conversationId: ctx.conversationId } }))

/** One model-written text (opening, followup, bridge) through the output guard; the tally counts the rewrite too. */
const written = (kind: string, modelRef: ModelRef, prompt: Prompt.Prompt, texts: GuardTexts) =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    const model = yield* registry.languageModel(modelRef)
    const tally: Tally = { inputTokens: 0, outputTokens: 0, cost: 0 }
    const write = (p: Prompt.Prompt) =>
      call(model.generateText({ prompt: p, toolChoice: "none" })).pipe(
        Effect.tap((response) => count(tally, modelRef, response.usage)),
        Effect.map((response) => response.text.trim())
      )
    const first = yield* write(prompt)
    const text = first === ""
      ? ""
      : yield* guard(kind, texts, first, (reason) => write(correctionPrompt(prompt, reason)))
    return {
      text,
      model: modelRef,
      ...tally,
      tier: null,
      moveToStageId: null,
      knowledgePointIds: []
    } satisfies ReplyDraft
  })

/** An AI-generated opening message for the stage in `ctx.stage`. */
export const opening = (ctx: TurnContext): Written =>
  written("opening", ctx.model, openingPrompt(ctx), guardTexts(ctx, null)).pipe(
    Effect.withSpan("Agent.opening", { attributes: { conversationId: ctx.conversationId } })
  )

/** A followup message (a step of the stage's followup sequence) for a contact who has not answered. */
export const followup = (f: FollowupContext): Written =>
  written(
    "followup",
    f.context.model,
    followupPrompt(f),
    guardTexts(f.context, null, { instructions: [f.instructions], allowed: [f.assets] })
  ).pipe(
    Effect.withSpan("Agent.followup", { attributes: { conversationId: f.context.conversationId, step: f.step } })
  )

/** The contact's bridge message of a handoff, written by the pipeline's model. */
export const bridge = (ctx: TurnContext, second: boolean): Written =>
  written("bridge", ctx.model, bridgePrompt(ctx, second), guardTexts(ctx, null)).pipe(
    Effect.withSpan("Agent.bridge", { attributes: { conversationId: ctx.conversationId } })
  )

/** The summary an operator reads when a person is asked for. */
export const summarise = (ctx: TurnContext): Effect.Effect<string, AiError.AiError | ModelUnavailable, ModelRegistry> =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    const model = yield* registry.languageModel(ctx.model)
    const response = yield* call(model.generateText({ prompt: summaryPrompt(ctx), toolChoice: "none" }))
    yield* count({ inputTokens: 0, outputTokens: 0, cost: 0 }, ctx.model, response.usage)
    return response.text.trim()
  }).pipe(Effect.withSpan("Agent.summarise", { attributes: { conversationId: ctx.conversationId } }))
