/**
 * Re-embedding when the configured embedding model changes. Every point records the model that made
 * its vector, and `knowledge_embedding_state` the model all points were last brought to. When a runner
 * starts with another model (one runner of the cluster runs this), it walks the points in id order, in
 * batches, and embeds again those made by another model; a point upserted in the meantime (its key
 * changed) is left to the upsert's own vector. Then it records the model, so a restart with the same
 * model costs one row read. Re-embedding is the operator's change: it is not charged to workspaces.
 *
 * Until the walk ends, search compares queries embedded by the new model with some points embedded by
 * the old one: vector hits are weaker for those points, keyword hits are unaffected.
 */
import { Singleton } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Schedule } from "effect"
import { Embedder, toVector } from "./Embedder.js"
import { makeStatistics } from "./Statistics.js"
import { TableReembedLive } from "./TableReembed.js"

const BATCH = 128

export const reembed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const embedder = yield* Embedder
  const [state] = yield* sql<{ model: string }>`select model from knowledge_embedding_state`
  if (state?.model === embedder.key) return { embedded: 0, recognised: 0 }
  // a database without points (every fresh one) only records the model
  const [points] = yield* sql<{ any: boolean }>`select exists (select 1 from knowledge_points) as any`
  const any = points?.any === true
  if (any) {
    yield* Effect.logInfo("Embedding knowledge points with the configured model").pipe(
      Effect.annotateLogs({ from: state?.model ?? "(unrecorded)", to: embedder.key })
    )
  }
  let after = "00000000-0000-0000-0000-000000000000"
  let embedded = 0
  let recognised = 0
  while (any) {
    const rows = yield* sql<
      { id: string; search_text: string; embedding_key: string | null; embedding_model: string | null }
    >`
      select id::text as id, search_text, embedding_key, embedding_model from knowledge_points
      where id > ${after}::uuid
        -- a table on a provider's model keeps its own vectors (TableReembed.ts)
        and knowledge_table_id in (select id from knowledge_tables where embedding_model_id is null)
      order by id limit ${BATCH}`
    if (rows.length === 0) break
    after = rows[rows.length - 1]!.id
    const stale = rows.filter((r) => r.embedding_model !== embedder.key)
    // points from before models were recorded: their key tells whether this model made them
    const known = stale.filter((r) =>
      r.embedding_model === null && r.embedding_key === Embedder.keyOf(embedder.key, r.search_text)
    )
    const todo = stale.filter((r) => !known.includes(r))
    if (known.length > 0) {
      yield* sql`update knowledge_points set embedding_model = ${embedder.key}
                 where id::text in ${sql.in(known.map((r) => r.id))} and embedding_model is null`
      recognised += known.length
    }
    if (todo.length === 0) continue
    const vectors = yield* embedder.model.embedMany(todo.map((r) => r.search_text))
    const values = todo.map((r, i) =>
      sql`(${r.id}::uuid, ${toVector(vectors[i]!)}::vector, ${
        Embedder.keyOf(embedder.key, r.search_text)
      }, ${r.embedding_key})`
    )
    // a point whose key changed since it was read was upserted meanwhile: its own vector stands
    yield* sql`
      update knowledge_points p set embedding = v.embedding, embedding_key = v.key, embedding_model = ${embedder.key}
      from (values ${sql.csv(values)}) as v (id, embedding, key, old_key)
      where p.id = v.id and p.embedding_key is not distinct from v.old_key`
    embedded += todo.length
  }
  yield* sql`
    insert into knowledge_embedding_state (model) values (${embedder.key})
    on conflict (id) do update set model = excluded.model, completed_at = now()`
  if (any) {
    yield* Effect.logInfo("Knowledge points embedded with the configured model").pipe(
      Effect.annotateLogs({ embedded, recognised })
    )
  }
  return { embedded, recognised }
})

/**
 * The cluster singleton: at start, statistics for a table never analyzed (a data dir from before
 * knowledge/Statistics.ts), then the re-embedding; a failure (the embedding provider down) is retried.
 */
const ServerReembedLive = Singleton.make(
  "Knowledge/re-embed",
  Effect.flatMap(makeStatistics, (statistics) => statistics.analyzeIfNever).pipe(
    Effect.zipRight(reembed),
    Effect.tapErrorCause(Effect.logWarning),
    Effect.retry(Schedule.exponential(Duration.seconds(5)).pipe(Schedule.union(Schedule.spaced(Duration.minutes(5))))),
    Effect.orDie,
    Effect.asVoid
  )
).pipe(Layer.provide(Embedder.Default))

/** The server's re-embedding and the tables' own (TableReembed.ts), each one per cluster. */
export const ReembedLive = Layer.mergeAll(ServerReembedLive, TableReembedLive)
