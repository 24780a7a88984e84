/**
 * Which catalogue models this process can call: a `local` model always, an `openai` or `anthropic` one
 * only when its provider's key is set (RemoteModels). A model without its key makes no replies
 * (`model_not_configured`), so choosing one is a warning on pipeline create and update, and every active
 * pipeline in that state is named at start-up.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import { RemoteModels } from "./Providers.js"

const CatalogueModel = Schema.Struct({
  id: Schema.Number,
  model: Schema.String,
  provider: Schema.String,
  kind: Schema.String,
  has_key: Schema.Boolean
})

const ActivePipeline = Schema.Struct({
  id: Schema.Number,
  workspace_id: Schema.Number,
  name: Schema.String,
  ai_model_id: Schema.Number,
  is_model_routing_enabled: Schema.Boolean,
  model_pool: Schema.Array(Schema.Struct({ ai_model_id: Schema.Number }))
})

/**
 * The models a pipeline's replies use: its own, and the four tiers' when Smart Routing is on (as the turn reads them).
 */
export const pipelineModelIds = (p: {
  readonly ai_model_id: number
  readonly is_model_routing_enabled: boolean
  readonly pool: ReadonlyArray<{ readonly ai_model_id: number }>
}): ReadonlyArray<number> => [
  p.ai_model_id,
  ...(p.is_model_routing_enabled && p.pool.length === 4 ? p.pool.map((t) => t.ai_model_id) : [])
]

const listOf = (items: ReadonlyArray<string>) =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`

export class ModelKeys extends Effect.Service<ModelKeys>()("@parley/server/ModelKeys", {
  dependencies: [RemoteModels.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const remote = yield* RemoteModels

    /**
     * What a model's provider still needs in this process, or null when its models can be called: the environment
     * variable of a seeded provider without a stored key, or a managed provider's `api_key` (OpenAI-compatible servers
     * need none).
     */
    const missingKey = (m: { readonly provider: string; readonly kind: string; readonly has_key: boolean }) => {
      if (m.has_key || m.kind === "local" || m.kind === "openai_compatible") return null
      switch (m.provider) {
        case "openai":
          return remote.configured.openai ? null : "OPENAI_API_KEY"
        case "anthropic":
          return remote.configured.anthropic ? null : "ANTHROPIC_API_KEY"
        default:
          return `the api_key of the provider ${m.provider}`
      }
    }

    /** `the model gpt-4o needs OPENAI_API_KEY`, one clause per missing key; null when every model can be called. */
    const problemWith = (models: ReadonlyArray<typeof CatalogueModel.Type>) => {
      const byKey = new Map<string, Array<string>>()
      for (const m of models) {
        const key = missingKey(m)
        if (key === null) continue
        const names = byKey.get(key) ?? []
        if (!names.includes(m.model)) names.push(m.model)
        byKey.set(key, names)
      }
      if (byKey.size === 0) return null
      const clauses = [...byKey].map(([key, names]) =>
        names.length === 1 ? `the model ${names[0]} needs ${key}` : `the models ${listOf(names)} need ${key}`
      )
      return { text: listOf(clauses), keys: byKey.size }
    }

    const findModels = SqlSchema.findAll({
      Request: Schema.Array(Schema.Number),
      Result: CatalogueModel,
      execute: (ids) =>
        sql`select m.id, m.model, pr.slug as provider, pr.kind, pr.api_key_ciphertext is not null as has_key
            from ai_models m join ai_providers pr on pr.id = m.ai_provider_id
            where m.id in ${sql.in(ids)} order by m.id`
    })

    const findActivePipelines = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ActivePipeline,
      execute: () =>
        sql`select l.id, l.workspace_id, l.name, l.ai_model_id, l.is_model_routing_enabled, l.model_pool
            from pipelines p cross join lateral parley_live_pipeline(p.id) l
            where l.status = 'active' and not l.is_archived order by l.id`
    })

    /** For a pipeline's models: the sentence a create or update answers with, or null when they can all be called. */
    const warningFor = Effect.fn("ModelKeys.warningFor")(function*(modelIds: ReadonlyArray<number>) {
      if (modelIds.length === 0) return null
      const problem = problemWith(yield* findModels(modelIds).pipe(Effect.orDie))
      if (problem === null) return null
      return `${problem.text}; replies will not be made until ${problem.keys === 1 ? "it is" : "they are"} set.`
    })

    /** One Warning per active pipeline whose models cannot be called in this process. */
    const warnAtStart = Effect.gen(function*() {
      const pipelines = yield* findActivePipelines(undefined)
      if (pipelines.length === 0) return
      const used = pipelines.map((p) => ({ pipeline: p, ids: pipelineModelIds({ ...p, pool: p.model_pool }) }))
      const catalogue = new Map((yield* findModels([...new Set(used.flatMap((u) => u.ids))])).map((m) => [m.id, m]))
      for (const { ids, pipeline: p } of used) {
        const problem = problemWith(ids.flatMap((id) => catalogue.get(id) ?? []))
        if (problem === null) continue
        yield* Effect.logWarning(
          `Pipeline ${p.id} "${p.name}" will make no replies: ${problem.text}; ${
            problem.keys === 1 ? "it is" : "they are"
          } not set`
        ).pipe(Effect.annotateLogs({ pipeline_id: p.id, workspace_id: p.workspace_id, reason: "model_not_configured" }))
      }
    }).pipe(
      // a diagnostic: it never stops the server from starting
      Effect.catchAllCause((cause) => Effect.logError("Checking the active pipelines' models failed", cause)),
      Effect.withSpan("ModelKeys.warnAtStart")
    )

    return { missingKey, warningFor, warnAtStart }
  })
}) {}

/** At start-up: a Warning per active pipeline whose model this process cannot call (docs/agent.md, "Without a key"). */
export const ModelKeysCheckLive = Layer.effectDiscard(Effect.flatMap(ModelKeys, (keys) => keys.warnAtStart)).pipe(
  Layer.provide(ModelKeys.Default)
)
