/**
 * SQL of knowledge sources: the only writer of `knowledge_sources` (the points of a source are written by
 * KnowledgeRepo, through the upsert path; a run's frontier by SourcePagesRepo). A row also numbers its runs: `claim`
 * starts the next run of a pending source with a lease, `progress` renews it step by step, `stalled` finds runs whose
 * lease expired, and `finish` ends a run unless a sync was asked for meanwhile. Database failures are defects here.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { KnowledgeSource, type SourceKind } from "@parley/domain"
import { Effect, Option, Schema } from "effect"

const iso = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

/** What a run of a sync needs of its source. */
export const ClaimedSource = Schema.Struct({
  id: Schema.Number,
  knowledge_table_id: Schema.Number,
  workspace_id: Schema.Number,
  kind: Schema.Literal("file", "url", "sitemap", "crawl"),
  name: Schema.String,
  url: Schema.NullOr(Schema.String),
  file_path: Schema.NullOr(Schema.String),
  mimetype: Schema.NullOr(Schema.String),
  settings: Schema.Struct({
    max_pages: Schema.optional(Schema.Number),
    max_depth: Schema.optional(Schema.Number),
    include: Schema.optional(Schema.Array(Schema.String)),
    exclude: Schema.optional(Schema.Array(Schema.String))
  })
})
export type ClaimedSource = typeof ClaimedSource.Type

export interface NewSource {
  readonly tableId: number
  readonly workspaceId: number
  readonly kind: SourceKind
  readonly name: string
  readonly url: string | null
  readonly filePath: string | null
  readonly mimetype: string | null
  readonly settings: Record<string, unknown>
  readonly sync: "off" | "daily" | "weekly"
}

/** `src12-` and `src1-` differ by the dash: a source's points are exactly those with its prefix. */
export const pointPrefix = (sourceId: number) => `src${sourceId}-`

export class SourcesRepo extends Effect.Service<SourcesRepo>()("@parley/server/SourcesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const columns = sql.unsafe(`id::int as id, knowledge_table_id::int as knowledge_table_id, kind, name, url, status,
      error, points, pages, progress, sync, ${iso("last_synced_at")} as last_synced_at, ${
      iso("created_at")
    } as created_at,
      ${iso("updated_at")} as updated_at`)

    const list = SqlSchema.findAll({
      Request: Schema.Number,
      Result: KnowledgeSource,
      execute: (tableId) =>
        sql`select ${columns} from knowledge_sources where knowledge_table_id = ${tableId} order by id`
    })

    const Key = Schema.Struct({ tableId: Schema.Number, id: Schema.Number })
    const get = SqlSchema.findOne({
      Request: Key,
      Result: KnowledgeSource,
      execute: ({ id, tableId }) =>
        sql`select ${columns} from knowledge_sources where id = ${id} and knowledge_table_id = ${tableId}`
    })

    /** The new source as it was stored (`pending`: the dispatcher may claim it before anyone reads it again). */
    const insert = (s: NewSource) =>
      sql`
        insert into knowledge_sources (knowledge_table_id, workspace_id, kind, name, url, file_path, mimetype, settings,
                                       sync, sync_requested_at)
        values (${s.tableId}, ${s.workspaceId}, ${s.kind}, ${s.name}, ${s.url}, ${s.filePath}, ${s.mimetype},
                ${JSON.stringify(s.settings)}::jsonb, ${s.sync}, now())
        returning ${columns}`.pipe(
        Effect.flatMap((rows) => Schema.decodeUnknown(KnowledgeSource)(rows[0])),
        Effect.orDie
      )

    /** A source being synced stays `processing`: the newer request makes it run again when it ends. */
    const requestSync = (tableId: number, id: number) =>
      sql`update knowledge_sources set sync_requested_at = clock_timestamp(), updated_at = now(),
            status = case when status = 'processing' then status else 'pending' end
          where id = ${id} and knowledge_table_id = ${tableId}
          returning 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /**
     * Sources whose schedule came round (a day or a week since their last sync, failed ones included: they keep their
     * last good points and try again) are made due, as a requested sync makes them.
     */
    const scheduleDue = sql`
      update knowledge_sources set sync_requested_at = clock_timestamp(), updated_at = now(), status = 'pending'
      where sync <> 'off' and status in ('ready', 'failed')
        and coalesce(last_synced_at, created_at)
          + case sync when 'daily' then interval '1 day' else interval '7 days' end <= now()`.pipe(
      Effect.asVoid,
      Effect.orDie
    )

    /** Deletes the row; its stored file's key, if it had one. */
    const remove = (tableId: number, id: number) =>
      sql<{ file_path: string | null }>`
        delete from knowledge_sources where id = ${id} and knowledge_table_id = ${tableId} returning file_path`.pipe(
        Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(rows[0]!.file_path)),
        Effect.orDie
      )

    /** The default_ids (and the `source` value) of the source's points. */
    const points = (tableId: number, id: number) =>
      sql<{ default_id: string; source: string | null }>`
        select default_id, data ->> 'source' as source from knowledge_points
        where knowledge_table_id = ${tableId} and starts_with(default_id, ${pointPrefix(id)})`.pipe(Effect.orDie)

    /**
     * A pending source, made `processing` in its next run (which serves the request it had) for `leaseMs`: the run
     * the dispatcher hands to the SyncKnowledgeSource workflow.
     */
    const claim = (leaseMs: number) =>
      sql<{ id: number; run: number }>`
        update knowledge_sources s set status = 'processing', sync_run = sync_run + 1, dispatches = 1,
          run_requested_at = sync_requested_at, progress = jsonb_build_object('done', 0, 'total', null),
          lease_until = now() + make_interval(secs => (${leaseMs} / 1000.0)::float8), updated_at = now()
        where s.id = (
          select id from knowledge_sources where status = 'pending'
          order by sync_requested_at nulls first, id limit 1 for update skip locked)
        returning s.id::int as id, s.sync_run as run`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /**
     * Runs whose lease expired (no step renewed it: the workflow stalled or was never started), handed out again for
     * `leaseMs`, with how often each was.
     */
    const stalled = (leaseMs: number) =>
      sql<{ id: number; run: number; dispatches: number }>`
        update knowledge_sources set dispatches = dispatches + 1, updated_at = now(),
          lease_until = now() + make_interval(secs => (${leaseMs} / 1000.0)::float8)
        where status = 'processing' and lease_until < now()
        returning id::int as id, sync_run as run, dispatches`.pipe(Effect.orDie)

    /** The source while `run` is its current run; none once it ended, was deleted or a newer run took over. */
    const running = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, run: Schema.Number }),
      Result: ClaimedSource,
      execute: ({ id, run }) =>
        sql`
          select id::int as id, knowledge_table_id::int as knowledge_table_id, workspace_id::int as workspace_id, kind,
            name, url, file_path, mimetype, settings
          from knowledge_sources where id = ${id} and sync_run = ${run} and status = 'processing'`
    })

    /** Whether the source is still stored (its points are cleaned up after it otherwise). */
    const exists = (id: number) =>
      sql`select 1 from knowledge_sources where id = ${id}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** Pages done, and the lease renewed; false once `run` is no longer current (the source deleted, or taken over). */
    const progress = (id: number, run: number, done: number, total: number | null, leaseMs: number) =>
      sql`update knowledge_sources set progress = jsonb_build_object('done', ${done}::int, 'total', ${total}::int),
            lease_until = now() + make_interval(secs => (${leaseMs} / 1000.0)::float8), updated_at = now()
          where id = ${id} and sync_run = ${run} and status = 'processing'
          returning 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** The lease renewed alone (a page's chunks are being written); false once `run` is no longer current. */
    const renew = (id: number, run: number, leaseMs: number) =>
      sql`update knowledge_sources set lease_until = now() + make_interval(secs => (${leaseMs} / 1000.0)::float8)
          where id = ${id} and sync_run = ${run} and status = 'processing'
          returning 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /**
     * The end of run `run`: `ready` with its counts, or `failed` with the reason (the counts of the last good sync
     * kept). A sync asked for while it ran (`sync_requested_at` moved past the request it served) leaves it `pending`.
     */
    const finish = (
      id: number,
      run: number,
      outcome:
        | { readonly _tag: "ready"; readonly points: number; readonly pages: number; readonly note: string | null }
        | { readonly _tag: "failed"; readonly error: string }
    ) => {
      const status = sql`case when sync_requested_at is distinct from run_requested_at then 'pending'
        else ${outcome._tag} end`
      const current = sql`id = ${id} and sync_run = ${run} and status = 'processing'`
      return (outcome._tag === "ready"
        ? sql`update knowledge_sources set status = ${status}, error = ${outcome.note}, points = ${outcome.points},
                pages = ${outcome.pages}, progress = null, last_synced_at = now(), lease_until = null, updated_at = now()
              where ${current}`
        : sql`update knowledge_sources set status = ${status}, error = ${outcome.error.slice(0, 1000)},
                progress = null, lease_until = null, updated_at = now()
              where ${current}`).pipe(Effect.asVoid, Effect.orDie)
    }

    return {
      list: (tableId: number) => list(tableId).pipe(Effect.orDie),
      get: (tableId: number, id: number) => get({ tableId, id }).pipe(Effect.orDie),
      insert,
      requestSync,
      remove,
      points,
      claim,
      stalled,
      running: (id: number, run: number) => running({ id, run }).pipe(Effect.orDie),
      exists,
      scheduleDue,
      progress,
      renew,
      finish
    }
  })
}) {}
