/**
 * Changing a knowledge table's embedding model (docs/api.md, "Embedding models"). `start` records the target
 * in the table row; the runner (one per cluster, like Reembed.ts) embeds the points without a new vector, batch by
 * batch, into `next_embedding`; when every point has one, one statement swaps them in with the model. Until then
 * the table's search uses its old vectors and model. A provider failure is recorded in the row and the table is
 * tried again later (backing off); nothing is lost, and a restart resumes from the row. Points upserted meanwhile
 * get both vectors (Knowledge.upsert). Re-embedding is the operator's choice of model: it is not charged.
 */
import { Singleton } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { Embedder, toVector } from "./Embedder.js"
import type { TableColumns } from "./KnowledgeRepo.js"
import { TableEmbedders, type TableModel } from "./TableEmbedders.js"

const BATCH = 64
/** The longest pause after failures in a row. */
const MAX_BACKOFF_MS = 5 * 60_000

type State = Pick<TableColumns, "embedding_model_id" | "reembedding" | "reembed_model_id">

/** Whether two reads of a table's models agree (an upsert's vectors are for the models it read). */
export const sameState = (a: State, b: State) =>
  a.embedding_model_id === b.embedding_model_id && a.reembedding === b.reembedding &&
  a.reembed_model_id === b.reembed_model_id

export class TableReembed extends Effect.Service<TableReembed>()("@parley/server/TableReembed", {
  dependencies: [TableEmbedders.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const embedders = yield* TableEmbedders

    /** The table's models, locked against a change (`share`: upserts) or for one (`update`: a switch, a swap). */
    const lockState = (tableId: number, mode: "share" | "update") =>
      sql<State>`
        select embedding_model_id::int as embedding_model_id, reembedding, reembed_model_id::int as reembed_model_id
        from knowledge_tables where id = ${tableId} ${mode === "share" ? sql`for share` : sql`for update`}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    const clearNext = (tableId: number) =>
      sql`update knowledge_points set next_embedding = null, next_embedding_key = null
          where knowledge_table_id = ${tableId} and next_embedding is not null`

    /**
     * Moves the table to `target` (null: the server's embedder): at once when it has no points, else by a
     * re-embedding; back to its current model cancels one under way. Runs in the caller's transaction.
     */
    const start = Effect.fn("TableReembed.start")(function*(tableId: number, target: number | null) {
      const state = yield* lockState(tableId, "update")
      if (Option.isNone(state)) return
      const { embedding_model_id: current, reembed_model_id: moving, reembedding } = state.value
      if (reembedding ? moving === target : current === target) return
      yield* clearNext(tableId)
      const [points] = yield* sql<{ any: boolean }>`
        select exists (select 1 from knowledge_points where knowledge_table_id = ${tableId}) as any`
      if (current === target || points?.any !== true) {
        yield* sql`update knowledge_tables set embedding_model_id = ${target},
                   embedding_dimensions = ${
          current === target ? sql`embedding_dimensions` : target === null ? sql`256` : sql`null`
        },
                   reembedding = false, reembed_model_id = null, reembed_dimensions = null, reembed_failures = 0,
                   reembed_error = null, reembed_retry_at = null, updated_at = now()
                   where id = ${tableId}`
        return
      }
      yield* sql`update knowledge_tables set reembedding = true, reembed_model_id = ${target},
                 reembed_dimensions = null, reembed_failures = 0, reembed_error = null, reembed_retry_at = null,
                 updated_at = now()
                 where id = ${tableId}`
    }, Effect.orDie)

    /** Every point has the new vector: they and the model become the table's, in one statement. */
    const swap = (tableId: number, model: TableModel) =>
      sql.withTransaction(Effect.gen(function*() {
        const state = yield* lockState(tableId, "update")
        if (Option.isNone(state) || !state.value.reembedding || state.value.reembed_model_id !== model.modelId) {
          return true
        }
        const vectors = model.modelId === null
          ? sql`embedding = p.next_embedding::vector(256), model_embedding = null`
          : sql`model_embedding = p.next_embedding, embedding = null`
        const swapped = yield* sql<{ id: number }>`
          with t as (
            update knowledge_tables set embedding_model_id = reembed_model_id,
              embedding_dimensions = ${model.modelId === null ? sql`256` : sql`reembed_dimensions`},
              reembedding = false, reembed_model_id = null, reembed_dimensions = null, reembed_failures = 0,
              reembed_error = null, reembed_retry_at = null, updated_at = now()
            where id = ${tableId} and not exists (
              select 1 from knowledge_points where knowledge_table_id = ${tableId} and next_embedding is null)
            returning id
          ), p as (
            update knowledge_points p set ${vectors}, embedding_key = p.next_embedding_key,
              embedding_model = ${model.key}, next_embedding = null, next_embedding_key = null
            where p.knowledge_table_id in (select id from t)
          )
          select id::int as id from t`
        return swapped.length > 0
      }))

    /** Embeds the table's points for its target, batch by batch, then swaps; a provider failure ends it early. */
    const run = Effect.fn("TableReembed.run")(function*(tableId: number, target: number | null) {
      const model = yield* embedders.of(target)
      for (;;) {
        const rows = yield* sql<{ id: string; search_text: string }>`
          select id::text as id, search_text from knowledge_points
          where knowledge_table_id = ${tableId} and next_embedding is null order by id limit ${BATCH}`
        if (rows.length === 0) {
          if (yield* swap(tableId, model)) return
          continue
        }
        const vectors = yield* model.embed(rows.map((r) => r.search_text))
        const values = rows.map((r, i) =>
          sql`(${r.id}::uuid, ${toVector(vectors[i]!)}, ${Embedder.keyOf(model.key, r.search_text)}, ${r.search_text})`
        )
        // a point whose text changed since it was read was upserted meanwhile, with its own new vector
        const still = yield* sql<{ id: number }>`
          with t as (
            update knowledge_tables set reembed_dimensions = coalesce(reembed_dimensions, ${
          vectors[0]?.length ?? null
        }),
              reembed_failures = 0, reembed_error = null
            where id = ${tableId} and reembedding and reembed_model_id is not distinct from ${target}
            returning id
          ), p as (
            update knowledge_points p set next_embedding = v.embedding::vector, next_embedding_key = v.key
            from (values ${sql.csv(values)}) as v (id, embedding, key, search_text)
            where p.id = v.id and p.knowledge_table_id in (select id from t) and p.next_embedding is null
              and p.search_text = v.search_text
          )
          select id::int as id from t`
        if (still.length === 0) return
      }
    })

    /** A failed run, recorded in the row: the table waits (doubling, at most MAX_BACKOFF_MS) and is tried again. */
    const failed = (tableId: number, message: string, retryMs: number) =>
      sql`update knowledge_tables set reembed_failures = reembed_failures + 1, reembed_error = ${message.slice(0, 500)},
          reembed_retry_at = now() + make_interval(
            secs => (least(${MAX_BACKOFF_MS}, ${retryMs} * power(2, least(reembed_failures, 20))) / 1000.0)::float8)
          where id = ${tableId} and reembedding`.pipe(Effect.orDie, Effect.asVoid)

    /** One pass over the tables whose re-embedding is due. */
    const sweep = (retryMs: number) =>
      Effect.gen(function*() {
        const due = yield* sql<{ id: number; reembed_model_id: number | null }>`
          select id::int as id, reembed_model_id::int as reembed_model_id from knowledge_tables
          where reembedding and (reembed_retry_at is null or reembed_retry_at <= now()) order by id`.pipe(Effect.orDie)
        for (const table of due) {
          yield* run(table.id, table.reembed_model_id).pipe(
            Effect.catchTag("EmbeddingFailed", (e) =>
              Effect.logWarning("Re-embedding a knowledge table paused").pipe(
                Effect.annotateLogs({ knowledge_table_id: table.id, problem: e.message }),
                Effect.zipRight(failed(table.id, e.message, retryMs))
              )),
            Effect.orDie
          )
        }
      })

    return { lockState, start, sweep }
  })
}) {}

/** The runner: one per cluster, polling for due tables (`KNOWLEDGE_REEMBED_POLL_MS`, retries from `..._RETRY_MS`). */
export const TableReembedLive = Singleton.make(
  "Knowledge/table-re-embed",
  Effect.gen(function*() {
    const every = yield* Config.integer("KNOWLEDGE_REEMBED_POLL_MS").pipe(Config.withDefault(2_000))
    const retryMs = yield* Config.integer("KNOWLEDGE_REEMBED_RETRY_MS").pipe(Config.withDefault(10_000))
    const reembed = yield* TableReembed
    yield* reembed.sweep(retryMs).pipe(
      Effect.catchAllCause(Effect.logError),
      Effect.repeat(Schedule.spaced(Duration.millis(every)))
    )
  }).pipe(Effect.orDie, Effect.asVoid)
).pipe(Layer.provide(TableReembed.Default))
