/**
 * The embedding model of each knowledge table: the server's Embedder (Embedder.ts) when the table names none, else
 * the `ai_models` row it names, called through its provider's endpoint (ProviderEndpoints: key and headers from the
 * row, never logged): `/embeddings` for OpenAI and OpenAI-compatible servers, `:batchEmbedContents` for Gemini.
 * A model's `key` goes into each point's embedding key, so a point is embedded again when its model changes.
 */
import { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Data, Effect, Option } from "effect"
import * as OpenAiCompatible from "../engine/OpenAiCompatible.js"
import { ProviderEndpoints } from "../models/ProviderEndpoints.js"
import { Embedder, localEmbedding } from "./Embedder.js"
import { geminiEmbed } from "./GeminiEmbeddings.js"

/** A provider could not embed (down, refusing, a malformed answer): the message never holds a secret. */
export class EmbeddingFailed extends Data.TaggedError("EmbeddingFailed")<{ readonly message: string }> {}

export interface TableModel {
  /** null: the server's embedder */
  readonly modelId: number | null
  readonly key: string
  /** one vector per text, in order */
  readonly embed: (texts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ReadonlyArray<number>>, EmbeddingFailed>
}

interface ModelInfo {
  readonly id: number
  readonly model: string
  readonly capabilities: ReadonlyArray<string>
  readonly provider_id: number
  readonly kind: string
  readonly workspace_id: number | null
  /** the provider row's `updated_at`: a changed key is read again */
  readonly revision: string
}

/** Texts per provider call: Gemini takes at most 100 requests in a batch. */
const CALL_BATCH = 96
/** Query vectors kept (a repeated question is not sent to the provider again). */
const QUERY_CACHE = 2000
const EMBEDDING_KINDS = new Set(["openai", "openai_compatible", "google", "local"])

export class TableEmbedders extends Effect.Service<TableEmbedders>()("@parley/server/TableEmbedders", {
  dependencies: [Embedder.Default, ProviderEndpoints.Default, NodeHttpClient.layerUndici],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const embedder = yield* Embedder
    const endpoints = yield* ProviderEndpoints
    const http = yield* HttpClient.HttpClient

    const find = (id: number) =>
      sql<ModelInfo>`
        select m.id::int as id, m.model, m.capabilities, pr.id::int as provider_id, pr.kind,
               pr.workspace_id::int as workspace_id, pr.updated_at::text as revision
        from ai_models m join ai_providers pr on pr.id = m.ai_provider_id where m.id = ${id}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** Why `modelId` may not embed a table of `workspaceId`, or none when it may (SPEC: 422 on the field). */
    const problem = Effect.fn("TableEmbedders.problem")(function*(modelId: number, workspaceId: number) {
      const row = yield* find(modelId)
      if (Option.isNone(row) || (row.value.workspace_id !== null && row.value.workspace_id !== workspaceId)) {
        return Option.some("The selected embedding model id is invalid.")
      }
      if (!row.value.capabilities.includes("embeddings")) {
        return Option.some("The model has no embeddings capability.")
      }
      if (!EMBEDDING_KINDS.has(row.value.kind)) return Option.some("The model's provider offers no embeddings.")
      return Option.none<string>()
    })

    const server: TableModel = {
      modelId: null,
      key: embedder.key,
      embed: (texts) =>
        embedder.model.embedMany(texts).pipe(Effect.mapError((e) => new EmbeddingFailed({ message: e.message })))
    }

    const call = (info: ModelInfo, texts: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        if (info.kind === "local") return texts.map(localEmbedding)
        const endpoint = yield* endpoints.of(info.provider_id, info.revision)
        if (info.kind === "google") return yield* geminiEmbed(endpoint, info.model, texts)
        const client = yield* OpenAiCompatible.make({
          baseUrl: endpoint.baseUrl,
          apiKey: endpoint.apiKey,
          headers: endpoint.headers,
          timeoutMs: endpoint.timeoutMs
        })
        return (yield* client.embed(info.model, texts)).vectors
      }).pipe(
        Effect.provideService(HttpClient.HttpClient, http),
        Effect.mapError((e) => new EmbeddingFailed({ message: e.message }))
      )

    /** The table's model; a model deleted since is an EmbeddingFailed (the table keeps its vectors). */
    const of = Effect.fn("TableEmbedders.of")(function*(modelId: number | null) {
      if (modelId === null) return server
      const row = yield* find(modelId)
      if (Option.isNone(row)) return yield* new EmbeddingFailed({ message: `The embedding model ${modelId} is gone` })
      const info = row.value
      return {
        modelId,
        key: `ai-model:${info.id}:${info.model}`,
        embed: (texts) =>
          Effect.forEach(
            Array.from({ length: Math.ceil(texts.length / CALL_BATCH) }, (_, i) =>
              texts.slice(i * CALL_BATCH, (i + 1) * CALL_BATCH)),
            (batch) =>
              call(info, batch)
          ).pipe(Effect.map((parts) => parts.flat()))
      } satisfies TableModel
    })

    const cached = new Map<string, ReadonlyArray<number>>()
    /** A search query's vector, kept per model and text. */
    const queryVector = (model: TableModel, text: string) =>
      Effect.suspend(() => {
        const key = `${model.key}\u0000${text}`
        const hit = cached.get(key)
        if (hit !== undefined) return Effect.succeed(hit)
        return Effect.map(model.embed([text]), ([vector]) => {
          if (cached.size >= QUERY_CACHE) cached.delete(cached.keys().next().value!)
          cached.set(key, vector!)
          return vector!
        })
      })

    return { problem, of, queryVector, server }
  })
}) {}
