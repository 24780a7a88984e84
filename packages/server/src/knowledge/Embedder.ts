/**
 * The embedding model of knowledge points and queries, as an `@effect/ai` EmbeddingModel: Parley's local
 * hashing embedding by default (deterministic, offline), or OpenAI's embeddings API when
 * `EMBEDDING_PROVIDER=openai` (asked for the same 256 dimensions). `key` names the model, so a point
 * embedded by another model (or from other text) is embedded again.
 */
import { EmbeddingModel } from "@effect/ai"
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiEmbeddingModel from "@effect/ai-openai/OpenAiEmbeddingModel"
import { NodeHttpClient } from "@effect/platform-node"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { createHash } from "node:crypto"

export const DIMENSIONS = 256

const fnv1a = (s: string) => {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

const tokens = (text: string) =>
  text.toLowerCase().normalize("NFKD").replace(/[^\p{L}\p{N}\s-]/gu, " ").split(/\s+/).filter(Boolean)

/**
 * Feature hashing of words (weight 1) and their character trigrams (weight 0.5) into 256 signed
 * buckets, L2-normalised: texts that share words or word parts point the same way.
 */
export const localEmbedding = (text: string): Array<number> => {
  const v = new Array<number>(DIMENSIONS).fill(0)
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature)
    v[h % DIMENSIONS]! += (h & 0x80000000 ? -1 : 1) * weight
  }
  for (const word of tokens(text)) {
    add(`w:${word}`, 1)
    const padded = `^${word}$`
    for (let i = 0; i + 3 <= padded.length; i++) add(`t:${padded.slice(i, i + 3)}`, 0.5)
  }
  const norm = Math.sqrt(v.reduce((a, x) => a + x * x, 0)) || 1
  return v.map((x) => x / norm)
}

export class Embedder extends Effect.Service<Embedder>()("@parley/server/Embedder", {
  scoped: Effect.gen(function*() {
    const provider = yield* Config.literal("local", "openai")("EMBEDDING_PROVIDER").pipe(
      Config.withDefault("local" as const)
    )
    if (provider === "local") {
      const model = yield* EmbeddingModel.make({
        embedMany: (input) =>
          Effect.sync(() => input.map((text, index) => ({ index, embeddings: localEmbedding(text) }))),
        maxBatchSize: 256
      })
      return { key: "local-hash-256", model }
    }
    const name = yield* Config.string("EMBEDDING_MODEL").pipe(Config.withDefault("text-embedding-3-small"))
    const apiKey = yield* Config.redacted("OPENAI_API_KEY").pipe(Config.option)
    const apiUrl = yield* Config.string("OPENAI_BASE_URL").pipe(Config.withDefault("https://api.openai.com/v1"))
    if (Option.isNone(apiKey)) return yield* Effect.dieMessage("EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY")
    const client = yield* OpenAiClient.make({ apiKey: apiKey.value, apiUrl: apiUrl.replace(/\/+$/, "") })
    const model = yield* Layer.build(
      OpenAiEmbeddingModel.layerBatched({ model: name, config: { dimensions: DIMENSIONS } })
    ).pipe(
      Effect.map(Context.get(EmbeddingModel.EmbeddingModel)),
      Effect.provideService(OpenAiClient.OpenAiClient, client)
    )
    return { key: `openai:${name}:${DIMENSIONS}`, model }
  }),
  // the client must live as long as the service (provided inside the constructor, it closed at once)
  dependencies: [NodeHttpClient.layerUndici]
}) {
  /** What an embedding was made from: the model and the text. */
  static keyOf(modelKey: string, text: string) {
    return createHash("sha256").update(modelKey).update("\0").update(text).digest("base64url").slice(0, 32)
  }
}

export const toVector = (v: ReadonlyArray<number>) =>
  `[${v.map((x) => (Number.isFinite(x) ? x.toFixed(6) : "0")).join(",")}]`

/**
 * A vector for bulk writes: its unit vector in millionths as integers, which the statement casts and
 * normalises again (`l2_normalize(v::vector)`: the same precision as `toVector`'s six decimals, within
 * float rounding). Postgres parses an integer cheaply; a decimal goes through the embedded database's
 * long-double `strtod` (about 0.3 ms of a point's 0.7 ms load on PGlite, docs/benchmarks.md).
 */
export const toMillionths = (v: ReadonlyArray<number>) => {
  const finite = v.map((x) => (Number.isFinite(x) ? x : 0))
  const norm = Math.sqrt(finite.reduce((a, x) => a + x * x, 0)) || 1
  return finite.map((x) => Math.round((x / norm) * 1e6))
}
export { Redacted }
