/**
 * The steps of a knowledge source's sync (issue 41), which the SyncKnowledgeSource workflow (packages/worker) runs as
 * activities: the server's side of the KnowledgeSyncs port. A run's frontier is stored (SourcePagesRepo.ts): a step
 * reads the next few queued pages (or the source's file, in one step), writes each page's chunks as points
 * (SourceWrite.ts) and records the page's outcome before the next, so a step repeated after a crash reads only the
 * pages not yet recorded. The finish deletes the source's points this run did not make (those of a page that failed
 * this time are kept) and ends the run `ready`; a run that could not read anything ends `failed` with the reason and
 * keeps the last good points. Each step renews the run's lease; a run no longer current (the source deleted, or its
 * run taken over) stops, and the points of a deleted source are cleaned up after it.
 */
import { KnowledgeSyncs, SourceStep } from "@parley/domain"
import { Cause, Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { FileStorage } from "../files/FileStorage.js"
import type { ChunkOptions, SourceDocument } from "./Chunker.js"
import { documentOf } from "./DocumentText.js"
import { KnowledgeRepo } from "./KnowledgeRepo.js"
import type { RunState } from "./SourceCrawl.js"
import { type CrawlSpec, SourceFetch } from "./SourceFetch.js"
import { SourcePagesRepo } from "./SourcePagesRepo.js"
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES } from "./Sources.js"
import { type ClaimedSource, SourcesRepo } from "./SourcesRepo.js"
import { RunEnded, SourceWrite, SyncFailed } from "./SourceWrite.js"

/** Pages a step reads at most: what a crash may make a run read twice. */
const STEP_PAGES = 5

const specOf = (s: ClaimedSource): CrawlSpec => ({
  kind: s.kind === "file" ? "url" : s.kind,
  url: s.url ?? "",
  maxPages: s.settings.max_pages ?? DEFAULT_MAX_PAGES,
  maxDepth: s.settings.max_depth ?? DEFAULT_MAX_DEPTH,
  include: s.settings.include ?? [],
  exclude: s.settings.exclude ?? []
})

export class SourceSteps extends Effect.Service<SourceSteps>()("@parley/server/SourceSteps", {
  dependencies: [
    SourcesRepo.Default,
    SourcePagesRepo.Default,
    KnowledgeRepo.Default,
    SourceWrite.Default,
    FileStorage.Default,
    SourceFetch.Default
  ],
  effect: Effect.gen(function*() {
    const leaseMs = yield* Config.integer("KNOWLEDGE_SOURCES_LEASE_MS").pipe(Config.withDefault(120_000))
    const repo = yield* SourcesRepo
    const frontier = yield* SourcePagesRepo
    const knowledge = yield* KnowledgeRepo
    const writer = yield* SourceWrite
    const storage = yield* FileStorage
    const fetcher = yield* SourceFetch
    /** Each run's host and robots.txt rules, while it runs in this process (a resumed run reads them again). */
    const states = new Map<string, RunState>()

    const cleanUp = (sourceId: number, tableId: number) =>
      Effect.gen(function*() {
        if (yield* repo.exists(sourceId)) return
        const points = yield* repo.points(tableId, sourceId)
        yield* writer.remove(tableId, points.map((p) => p.default_id))
      })

    /** The chunks of one page or file as points, cut by the table's chunk settings; the lease renewed after each batch. */
    const writeDoc = (s: ClaimedSource, run: number, options: ChunkOptions, source: string, doc: SourceDocument) =>
      writer.write(
        { sourceId: s.id, tableId: s.knowledge_table_id, workspaceId: s.workspace_id },
        source,
        doc,
        options,
        Effect.flatMap(repo.renew(s.id, run, leaseMs), (current) => current ? Effect.void : Effect.fail(new RunEnded()))
      )

    const fileStep = (s: ClaimedSource, run: number, options: ChunkOptions) =>
      Effect.gen(function*() {
        const blob = s.file_path === null ? Option.none() : yield* storage.blob(s.file_path, s.mimetype ?? "")
        if (Option.isNone(blob)) return yield* new SyncFailed({ message: "The uploaded file is no longer stored." })
        const bytes = new Uint8Array(yield* Effect.promise(() => blob.value.arrayBuffer()))
        const doc = yield* documentOf(bytes, s.mimetype ?? "application/octet-stream", s.name).pipe(
          Effect.catchAll((e) => new SyncFailed({ message: e.message }))
        )
        yield* frontier.enqueue(s.id, run, [s.name], 0)
        const ids = yield* writeDoc(s, run, options, s.name, doc)
        yield* frontier.done(s.id, run, s.name, s.name, ids, doc.pages.length)
        yield* repo.progress(s.id, run, 1, 1, leaseMs)
        return true
      })

    /** The next pages of a web source's run; true when none is left (or the page limit is reached). */
    const webStep = (s: ClaimedSource, run: number, options: ChunkOptions) =>
      Effect.gen(function*() {
        const spec = specOf(s)
        const key = `${s.id}:${run}`
        let state = states.get(key)
        let counts = yield* frontier.counts(s.id, run)
        if (counts.rows === 0) {
          const start = yield* fetcher.startOf(spec).pipe(
            Effect.mapError((e) => new SyncFailed({ message: e.message }))
          )
          yield* frontier.skipped(s.id, run, start.skipped)
          yield* frontier.enqueue(s.id, run, start.entries, 0)
          state = { site: start.site, robots: new Map() }
          counts = yield* frontier.counts(s.id, run)
        } else if (state === undefined) {
          // a resumed run: a sitemap keeps to its own host, a crawl to the one its first page ended on
          const first = yield* frontier.startedAt(s.id, run)
          const site = s.kind === "sitemap" ? new URL(spec.url).host : first === null ? null : new URL(first).host
          state = { site: s.kind === "url" ? null : site, robots: new Map() }
        }
        states.set(key, state)
        const total = s.kind === "crawl" ? null : Math.min(counts.listed, spec.maxPages)
        let fetched = counts.fetched
        for (const entry of yield* frontier.next(s.id, run, STEP_PAGES)) {
          if (fetched >= spec.maxPages) break
          const visited = yield* fetcher.visit(spec, entry, state).pipe(
            Effect.mapError((e) => new SyncFailed({ message: e.message }))
          )
          if (visited._tag === "Failed") {
            if (visited.fetched) fetched++
            yield* frontier.failed(s.id, run, entry.url, visited.failure.message, visited.fetched)
            continue
          }
          fetched++
          const ids = visited.take ? yield* writeDoc(s, run, options, visited.url, visited.document) : []
          yield* frontier.done(s.id, run, entry.url, visited.url, ids)
          if (visited.follow.length > 0) yield* frontier.enqueue(s.id, run, visited.follow, entry.depth + 1)
          if (!(yield* repo.progress(s.id, run, fetched, total, leaseMs))) return yield* new RunEnded()
        }
        const after = yield* frontier.counts(s.id, run)
        return after.queued === 0 || after.fetched >= spec.maxPages
      })

    /**
     * A step (or a finish) that died (a database error such as Postgres's "deadlock detected" when a large load rebuilds the
     * knowledge graph meanwhile) is tried again twice, half a second apart, before the run is failed: a step records
     * each page's outcome as it goes and writes the same ids, so trying it again repeats nothing that was done.
     */
    const again = <A, E>(step: Effect.Effect<A, E>) =>
      step.pipe(
        Effect.sandbox,
        Effect.tapError((cause) =>
          Cause.isDie(cause) && !Cause.isInterrupted(cause)
            ? Effect.logWarning("A knowledge source's sync step died; trying it again", cause)
            : Effect.void
        ),
        Effect.retry({
          times: 2,
          schedule: Schedule.spaced(Duration.millis(500)),
          while: (cause) => Cause.isDie(cause) && !Cause.isInterrupted(cause)
        }),
        Effect.unsandbox
      )

    const fail = (id: number, run: number, error: string) =>
      Effect.zipRight(repo.finish(id, run, { _tag: "failed", error }), frontier.clear(id, run))

    const step = (sourceId: number, run: number) =>
      Effect.gen(function*() {
        const found = yield* repo.running(sourceId, run)
        if (Option.isNone(found)) return new SourceStep({ done: true })
        const s = found.value
        const options = yield* knowledge.chunkOptions(s.knowledge_table_id)
        const done = yield* again(s.kind === "file" ? fileStep(s, run, options) : webStep(s, run, options)).pipe(
          Effect.catchTags({
            SyncFailed: (e) => Effect.as(fail(sourceId, run, e.message), true),
            RunEnded: () => Effect.as(cleanUp(sourceId, s.knowledge_table_id), true)
          }),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ?
              Effect.failCause(cause) :
              Effect.logError("A knowledge source's sync step failed", cause).pipe(
                Effect.zipRight(fail(sourceId, run, "The source could not be read (internal error).")),
                Effect.as(true)
              )
          )
        )
        return new SourceStep({ done })
      }).pipe(
        Effect.annotateLogs({ knowledge_source_id: sourceId, run }),
        Effect.withSpan("SourceSteps.step", { attributes: { knowledge_source_id: sourceId, run } })
      )

    const finish = (sourceId: number, run: number) =>
      again(Effect.gen(function*() {
        states.delete(`${sourceId}:${run}`)
        const found = yield* repo.running(sourceId, run)
        if (Option.isNone(found)) return
        const tableId = found.value.knowledge_table_id
        const pages = yield* frontier.outcome(sourceId, run)
        const failed = pages.filter((p) => p.state === "failed")
        const read = pages.filter((p) => p.state === "done")
        if (read.length === 0 && failed.length > 0) return yield* fail(sourceId, run, failed[0]!.error ?? "")
        const made = new Set(pages.flatMap((p) => p.point_ids))
        // a page that failed this time keeps the points it had
        const kept = new Set(failed.flatMap((p) => p.final_url === null ? [p.url] : [p.url, p.final_url]))
        const before = yield* repo.points(tableId, sourceId)
        const stale = before.filter((p) => !made.has(p.default_id) && !(p.source !== null && kept.has(p.source)))
        yield* writer.remove(tableId, stale.map((p) => p.default_id))
        const points = before.length - stale.length
        const note = failed.length === 0
          ? null
          : `${failed.length} page(s) could not be read; the first: ${failed[0]!.error ?? ""}`
        const done = read.reduce((n, p) => n + p.pages, 0)
        yield* repo.finish(sourceId, run, { _tag: "ready", points, pages: done, note })
        yield* frontier.clear(sourceId, run)
      })).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ?
            Effect.failCause(cause) :
            Effect.logError("Finishing a knowledge source's sync failed", cause).pipe(
              Effect.zipRight(fail(sourceId, run, "The source could not be read (internal error)."))
            )
        ),
        Effect.withSpan("SourceSteps.finish", { attributes: { knowledge_source_id: sourceId, run } })
      )

    return { step, finish }
  })
}) {}

/** The port the workflow runs on. */
export const KnowledgeSyncsLive = Layer.effect(KnowledgeSyncs, Effect.map(SourceSteps, (s) => KnowledgeSyncs.of(s)))
  .pipe(
    Layer.provide(SourceSteps.Default)
  )
