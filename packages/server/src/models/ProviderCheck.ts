/**
 * `POST /api/user/ai-providers/{id}/check`: lists the provider's models and makes one tiny request with one of them,
 * first offering a tool (a pipeline with actions needs tool calls), so the answer says plainly what works and what
 * failed: the address, the key, the model, tool support.
 */
import { type AiError, LanguageModel, Tool, Toolkit } from "@effect/ai"
import { type AiProviderId, ProviderCheck as CheckResult } from "@parley/domain"
import { Effect, Schema } from "effect"
import { RemoteModels } from "../engine/Providers.js"
import { AiProviders } from "./AiProviders.js"
import { ModelsRepo } from "./ModelsRepo.js"
import { ProviderEndpoints } from "./ProviderEndpoints.js"
import { ProviderProbe } from "./ProviderProbe.js"

/** The one tool offered: harmless, never called for real. */
const CheckTools = Toolkit.make(Tool.make("get_time", {
  description: "Returns the current time",
  parameters: { timezone: Schema.String },
  success: Schema.String
}))
const checkHandlers = CheckTools.toLayer({ get_time: () => Effect.succeed(new Date().toISOString()) })

const PROMPT = "Reply with the single word: ok"

/** The failure of a model call in one sentence (the provider's own words when it gave some). */
const describe = (error: AiError.AiError | { readonly message: string }) => error.message.slice(0, 400)

/** A provider that says a model has no tool support in its own words (Ollama, vLLM, llama.cpp say so plainly). */
const refusesTools = (message: string) => /tool|function/i.test(message)

export class ProviderChecks extends Effect.Service<ProviderChecks>()("@parley/server/ProviderChecks", {
  dependencies: [
    AiProviders.Default,
    ModelsRepo.Default,
    ProviderEndpoints.Default,
    ProviderProbe.Default,
    RemoteModels.Default
  ],
  effect: Effect.gen(function*() {
    const providers = yield* AiProviders
    const models = yield* ModelsRepo
    const endpoints = yield* ProviderEndpoints
    const probe = yield* ProviderProbe
    const remote = yield* RemoteModels

    const check = Effect.fn("ProviderChecks.check")(
      function*(id: AiProviderId, input: { readonly model?: string | undefined }) {
        const row = yield* providers.find(id)
        if (row.kind === "local") {
          return new CheckResult({
            ok: true,
            reachable: true,
            models: ["parley-local", "parley-local-mini", "parley-local-max"],
            model: null,
            reply: null,
            tools: true,
            problem: null
          })
        }
        const endpoint = yield* endpoints.of(row.id).pipe(Effect.orDie)
        const listed = yield* probe.listModels(endpoint)
        const fail = (problem: string, extra: Partial<{ model: string; tools: boolean }> = {}) =>
          new CheckResult({
            ok: false,
            reachable: listed.reachable,
            models: listed.models,
            model: extra.model ?? null,
            reply: null,
            tools: extra.tools ?? null,
            problem
          })
        if (!listed.reachable || listed.reason === "unauthorized") return fail(listed.problem ?? "The provider failed.")
        const ours = yield* models.list({ workspaceIds: [row.workspace_id ?? 0], providerId: row.id }).pipe(
          Effect.orDie
        )
        const model = input.model ?? ours.find((m) => !m.capabilities.includes("embeddings"))?.model ??
          listed.models[0]
        if (model === undefined) return fail("The provider lists no models; add one with its exact name and check it.")
        if (listed.models.length > 0 && !listed.models.includes(model)) {
          return fail(
            `The provider does not serve the model "${model}" (it lists ${listed.models.slice(0, 10).join(", ")}).`,
            {
              model
            }
          )
        }
        const lm = yield* remote.forEndpoint(endpoint, model).pipe(Effect.either)
        if (lm._tag === "Left") return fail(lm.left.message, { model })
        const answered = <E>(
          effect: Effect.Effect<LanguageModel.GenerateTextResponse<any>, E, LanguageModel.LanguageModel>
        ) =>
          effect.pipe(
            Effect.provideService(LanguageModel.LanguageModel, lm.right),
            Effect.map((r) => r.text.trim().slice(0, 200)),
            Effect.either
          )
        const ask = (withTools: boolean) =>
          withTools
            ? answered(
              LanguageModel.generateText({ prompt: PROMPT, toolkit: CheckTools }).pipe(Effect.provide(checkHandlers))
            )
            : answered(LanguageModel.generateText({ prompt: PROMPT, toolChoice: "none" }))
        const withTools = yield* ask(true)
        if (withTools._tag === "Right") {
          return new CheckResult({
            ok: true,
            reachable: true,
            models: listed.models,
            model,
            reply: withTools.right,
            tools: true,
            problem: null
          })
        }
        const plain = yield* ask(false)
        if (plain._tag === "Left") return fail(`The model "${model}" failed: ${describe(plain.left)}`, { model })
        const noTools = refusesTools(describe(withTools.left))
        return new CheckResult({
          ok: !noTools,
          reachable: true,
          models: listed.models,
          model,
          reply: plain.right,
          tools: false,
          problem: noTools
            ? `The model "${model}" answers but has no tool support (${
              describe(withTools.left)
            }): a pipeline with actions, stage moves or handoff needs one that has.`
            : `The model "${model}" answers without tools, but failed when offered one: ${describe(withTools.left)}`
        })
      }
    )

    return { check }
  })
}) {}
