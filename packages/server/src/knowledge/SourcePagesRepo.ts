/**
 * SQL of a sync run's frontier (`knowledge_source_pages`, its only writer): the pages a run is to read, in the order
 * they were found, and what came of each (the points it made, or why it failed). SourceSteps.ts reads the next
 * queued pages and records each outcome as it goes, so a run cut short resumes at the first page not yet recorded.
 * Database failures are defects here.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"

export const QueuedPage = Schema.Struct({ seq: Schema.Number, url: Schema.String, depth: Schema.Number })
export type QueuedPage = typeof QueuedPage.Type

/** URLs per insert statement (one array parameter). */
const INSERT_BATCH = 2_000

export class SourcePagesRepo extends Effect.Service<SourcePagesRepo>()("@parley/server/SourcePagesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * The counts of a run: rows in all, pages listed (not the failures found before any was read), pages read (what
     * the page limit counts) and pages still queued.
     */
    const counts = (sourceId: number, run: number) =>
      sql<{ rows: number; listed: number; fetched: number; queued: number }>`
        select count(*)::int as rows, count(*) filter (where seq >= 0)::int as listed,
          count(*) filter (where fetched)::int as fetched, count(*) filter (where state = 'queued')::int as queued
        from knowledge_source_pages where source_id = ${sourceId} and run = ${run}`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie
      )

    /**
     * Queues `urls` at `depth` after the run's last page; a URL the run already has (queued, or read: as asked or as
     * it ended after redirects) is not queued twice.
     */
    const enqueue = (sourceId: number, run: number, urls: ReadonlyArray<string>, depth: number) =>
      Effect.gen(function*() {
        for (let i = 0; i < urls.length; i += INSERT_BATCH) {
          const batch = urls.slice(i, i + INSERT_BATCH)
          yield* sql`
            insert into knowledge_source_pages (source_id, run, seq, url, depth)
            select ${sourceId}, ${run}, coalesce((select max(seq) from knowledge_source_pages
                where source_id = ${sourceId} and run = ${run}), -1) + n.ord, n.url, ${depth}
            from unnest(${batch}::text[]) with ordinality as n(url, ord)
            where not exists (select 1 from knowledge_source_pages p
              where p.source_id = ${sourceId} and p.run = ${run} and p.final_url = n.url)
            on conflict (source_id, run, url) do nothing`
        }
      }).pipe(Effect.orDie)

    /** Failures found before any page is read (a sitemap of the index that could not be read), recorded as such. */
    const skipped = (sourceId: number, run: number, failures: ReadonlyArray<{ url: string; message: string }>) =>
      Effect.forEach(failures, (f, i) =>
        sql`
          insert into knowledge_source_pages (source_id, run, seq, url, depth, state, error)
          values (${sourceId}, ${run}, ${-1 - i}, ${f.url}, 0, 'failed', ${f.message.slice(0, 1000)})
          on conflict (source_id, run, url) do nothing`, { discard: true }).pipe(Effect.orDie)

    const next = SqlSchema.findAll({
      Request: Schema.Struct({ sourceId: Schema.Number, run: Schema.Number, limit: Schema.Number }),
      Result: QueuedPage,
      execute: ({ limit, run, sourceId }) =>
        sql`select seq, url, depth from knowledge_source_pages
            where source_id = ${sourceId} and run = ${run} and state = 'queued' order by seq limit ${limit}`
    })

    /** A page (or a file of `pages` pages) read: where it ended after redirects and the points it made. */
    const done = (
      sourceId: number,
      run: number,
      url: string,
      finalUrl: string,
      pointIds: ReadonlyArray<string>,
      pages = 1
    ) =>
      sql`update knowledge_source_pages set state = 'done', fetched = true, final_url = ${finalUrl},
            point_ids = ${pointIds}::text[], pages = ${pages}
          where source_id = ${sourceId} and run = ${run} and url = ${url}`.pipe(Effect.asVoid, Effect.orDie)

    /** A page that could not be read (`fetched`: it was asked for, and counts against the page limit). */
    const failed = (sourceId: number, run: number, url: string, message: string, fetched: boolean) =>
      sql`update knowledge_source_pages set state = 'failed', fetched = ${fetched}, error = ${message.slice(0, 1000)}
          where source_id = ${sourceId} and run = ${run} and url = ${url}`.pipe(Effect.asVoid, Effect.orDie)

    /** Where the run's first page ended: the host a crawl keeps to. */
    const startedAt = (sourceId: number, run: number) =>
      sql<{ final_url: string | null }>`
        select final_url from knowledge_source_pages where source_id = ${sourceId} and run = ${run} and seq = 0`.pipe(
        Effect.map((rows) => rows[0]?.final_url ?? null),
        Effect.orDie
      )

    /** What the run made: the ids of its points, and the pages that failed (whose earlier points are kept). */
    const outcome = (sourceId: number, run: number) =>
      sql<{
        state: string
        url: string
        final_url: string | null
        point_ids: ReadonlyArray<string>
        pages: number
        error: string | null
      }>`
        select state, url, final_url, point_ids, pages, error from knowledge_source_pages
        where source_id = ${sourceId} and run = ${run} and state <> 'queued' order by seq`.pipe(Effect.orDie)

    /** The frontiers of the source's runs up to `run`, once it ended. */
    const clear = (sourceId: number, run: number) =>
      sql`delete from knowledge_source_pages where source_id = ${sourceId} and run <= ${run}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    return {
      counts,
      enqueue,
      skipped,
      next: (sourceId: number, run: number, limit: number) => next({ sourceId, run, limit }).pipe(Effect.orDie),
      done,
      failed,
      startedAt,
      outcome,
      clear
    }
  })
}) {}
