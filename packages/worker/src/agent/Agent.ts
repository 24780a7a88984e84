/**
 * How a reply is produced: Smart Routing picks the model (the router tier classifies the contact's
 * message, that tier's model answers with that tier's instructions), then a bounded tool loop runs
 * (model call, tool results back, final text). Tools only record what they would do; the turn applies
 * it together with the stored reply, so a repeated turn never applies anything twice.
 *
 * Provider failures are retried with backoff; what still fails is the caller's to record.
 */
import { type AiError, type LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import type { ModelRef, ReplyDraft, RoutingTier, TurnContext } from "@parley/domain"
import { Effect, Ref, Schedule, Schema } from "effect"
import { costOf, ModelRegistry, type ModelUnavailable } from "./Models.js"
import { candidateStages, openingPrompt, parseTier, replyPrompt, routerPrompt } from "./Prompting.js"

/** Model calls in one reply, tool round trips included; the last is made without tools. */
export const MAX_STEPS = 4

export const MoveToStage = Tool.make("move_to_stage", {
  description: "Move the opportunity to another stage of the pipeline when the conversation meets that stage's entry condition.",
  parameters: {
    stage_id: Schema.Number.annotations({ description: "The id of the stage, from the list of stages" }),
    reason: Schema.optional(Schema.String).annotations({ description: "What the contact said that meets the condition" })
  },
  success: Schema.Struct({ moved: Schema.Boolean, stage: Schema.optional(Schema.String), error: Schema.optional(Schema.String) })
})

export const AgentTools = Toolkit.make(MoveToStage)

interface Tally {
  inputTokens: number
  outputTokens: number
  cost: number
}

const retryPolicy = Schedule.exponential("500 millis", 2).pipe(Schedule.intersect(Schedule.recurs(2)))

/** One model call; transient provider failures are retried (3 calls in all). */
const call = <A>(effect: Effect.Effect<A, AiError.AiError>) => Effect.retry(effect, retryPolicy)

const count = (tally: Tally, model: ModelRef, usage: { readonly inputTokens: number | undefined; readonly outputTokens: number | undefined }) => {
  const u = { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 }
  tally.inputTokens += u.inputTokens
  tally.outputTokens += u.outputTokens
  tally.cost += costOf(model, u)
}

const route = (ctx: TurnContext, lm: (m: ModelRef) => Effect.Effect<LanguageModel.Service, ModelUnavailable>, tally: Tally) =>
  Effect.gen(function*() {
    const tiers = ctx.routing
    const router = tiers?.find((t) => t.tier === "router")
    if (!tiers || !router) return { model: ctx.model, instructions: null, tier: null as RoutingTier | null }
    const routerModel = yield* lm(router.model)
    const classified = yield* call(routerModel.generateText({ prompt: routerPrompt(ctx, router.instructions), toolChoice: "none" }))
    count(tally, router.model, classified.usage)
    const tier = parseTier(classified.text) ?? "moderate"
    const chosen = tiers.find((t) => t.tier === tier)
    if (!chosen) return { model: ctx.model, instructions: null, tier: null as RoutingTier | null }
    return { model: chosen.model, instructions: chosen.instructions, tier: tier as RoutingTier | null }
  })

/** The reply to the contact messages at the end of `ctx.history`. */
export const reply = (ctx: TurnContext): Effect.Effect<ReplyDraft, AiError.AiError | ModelUnavailable, ModelRegistry> =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    const tally: Tally = { inputTokens: 0, outputTokens: 0, cost: 0 }
    const routed = yield* route(ctx, registry.languageModel, tally)
    const model = yield* registry.languageModel(routed.model)

    const candidates = candidateStages(ctx)
    const moved = yield* Ref.make<number | null>(null)
    const handlers = AgentTools.toLayer({
      move_to_stage: ({ stage_id }) =>
        Effect.gen(function*() {
          const stage = candidates.find((s) => s.id === stage_id)
          if (!stage) return { moved: false, error: `stage_id ${stage_id} is not one of the listed stages` }
          yield* Ref.set(moved, stage.id)
          return { moved: true, stage: stage.name }
        })
    })

    let prompt = replyPrompt(ctx, routed.instructions)
    let text = ""
    for (let step = 1; step <= MAX_STEPS; step++) {
      const last = step === MAX_STEPS || candidates.length === 0
      if (last) {
        const response = yield* call(model.generateText({ prompt, toolChoice: "none" }))
        count(tally, routed.model, response.usage)
        text = response.text
        break
      }
      const response = yield* call(model.generateText({ prompt, toolkit: AgentTools }).pipe(Effect.provide(handlers)))
      count(tally, routed.model, response.usage)
      text = response.text
      if (response.toolCalls.length === 0) break
      prompt = Prompt.merge(prompt, Prompt.fromResponseParts(response.content))
    }

    return {
      text: text.trim(),
      model: routed.model,
      inputTokens: tally.inputTokens,
      outputTokens: tally.outputTokens,
      cost: tally.cost,
      tier: routed.tier,
      moveToStageId: yield* Ref.get(moved),
      knowledgePointIds: ctx.knowledge.map((k) => k.pointId)
    }
  }).pipe(Effect.withSpan("Agent.reply", { attributes: { conversationId: ctx.conversationId } }))

/** An AI-generated opening message for the stage in `ctx.stage`. */
export const opening = (ctx: TurnContext): Effect.Effect<ReplyDraft, AiError.AiError | ModelUnavailable, ModelRegistry> =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    const model = yield* registry.languageModel(ctx.model)
    const response = yield* call(model.generateText({ prompt: openingPrompt(ctx), toolChoice: "none" }))
    const tally: Tally = { inputTokens: 0, outputTokens: 0, cost: 0 }
    count(tally, ctx.model, response.usage)
    return { text: response.text.trim(), model: ctx.model, ...tally, tier: null, moveToStageId: null, knowledgePointIds: [] }
  }).pipe(Effect.withSpan("Agent.opening", { attributes: { conversationId: ctx.conversationId } }))
