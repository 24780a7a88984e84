/**
 * Syncing knowledge sources (issue 41): one runner per cluster (like TableReembed.ts) claims a `pending` source with
 * a lease, reads it (a file through DocumentText.ts, web pages one at a time through SourceFetch.ts), chunks each
 * document and upserts the chunks through the REST upsert's own path (PointUpserts.ts: the same validation,
 * embedding, credits and search). A chunk's `default_id` is `src{id}-{hash}`: an unchanged chunk keeps its id and
 * is not written again (so not embedded again); once every page is read, the source's points this sync did not
 * produce are deleted (those of a page that failed to load are kept). A failure sets `failed` with the reason and
 * keeps the last good points. A runner that dies leaves its lease to expire; the next one syncs the source again,
 * and the same ids make that idempotent.
 */
import { Singleton } from "@effect/cluster"
import { type Actor, CurrentActor, type KnowledgeTableId, Scopes, type UserId, type WorkspaceId } from "@parley/domain"
import { Cause, Config, Data, Duration, Effect, Layer, Option, Predicate, Schedule, Stream } from "effect"
import { FileStorage } from "../files/FileStorage.js"
import { chunk, DEFAULT_CHUNK_OPTIONS, type SourceDocument } from "./Chunker.js"
import { documentOf } from "./DocumentText.js"
import { KnowledgeRepo } from "./KnowledgeRepo.js"
import { PointUpserts } from "./PointUpserts.js"
import { type FetchFailed, SourceFetch } from "./SourceFetch.js"
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES } from "./Sources.js"
import { type ClaimedSource, pointPrefix, SourcesRepo } from "./SourcesRepo.js"

/** Chunks per upsert: one embedding request each. */
const BATCH = 64
/** Point ids per delete statement. */
const DELETE_BATCH = 5_000

/** The reason a sync ends `failed`, in words for the source's `error`. */
class SyncFailed extends Data.TaggedError("SyncFailed")<{ readonly message: string }> {}
/** The source was deleted while it synced: what this sync wrote goes too. */
class SourceGone extends Data.TaggedError("SourceGone") {}

/** The upsert path checks the table against the caller's workspaces: a sync acts for the source's own. */
const actorFor = (workspaceId: number): Actor => ({
  userId: 0 as UserId,
  authenticatedUserId: 0 as UserId,
  tokenId: 0 as never,
  scopes: Scopes,
  workspaceIds: [workspaceId as WorkspaceId],
  defaultWorkspaceId: workspaceId as WorkspaceId
})

const COLUMNS = ["text", "title", "section", "source", "page"] as const

export class SourceIngest extends Effect.Service<SourceIngest>()("@parley/server/SourceIngest", {
  dependencies: [
    SourcesRepo.Default,
    KnowledgeRepo.Default,
    PointUpserts.Default,
    FileStorage.Default,
    SourceFetch.Default
  ],
  effect: Effect.gen(function*() {
    const repo = yield* SourcesRepo
    const knowledge = yield* KnowledgeRepo
    const upserts = yield* PointUpserts
    const storage = yield* FileStorage
    const fetcher = yield* SourceFetch

    const deleteAll = (tableId: number, ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        let deleted = 0
        for (let i = 0; i < ids.length; i += DELETE_BATCH) {
          deleted += yield* knowledge.deletePoints(tableId, ids.slice(i, i + DELETE_BATCH))
        }
        return deleted
      })

    const sync = (s: ClaimedSource, leaseMs: number) =>
      Effect.gen(function*() {
        const tableId = s.knowledge_table_id as KnowledgeTableId
        const seen = new Set<string>()
        const failedPages: Array<FetchFailed> = []
        let pages = 0
        let total: number | null = null

        // read when run: the counts move as pages are written
        const renew = Effect.suspend(() => repo.progress(s.id, pages, total, leaseMs)).pipe(
          Effect.flatMap((alive) => alive ? Effect.void : Effect.fail(new SourceGone()))
        )

        /** A document's chunks as points; only those new or changed since the last sync are written. */
        const write = (source: string, doc: SourceDocument) =>
          Effect.gen(function*() {
            const points: Array<Record<string, string | number | null>> = []
            for (const c of chunk(doc, DEFAULT_CHUNK_OPTIONS)) {
              const id = `${pointPrefix(s.id)}${c.hash.slice(0, 16)}`
              if (seen.has(id)) continue
              seen.add(id)
              points.push({
                default_id: id,
                text: c.text,
                title: c.title?.slice(0, 1000) ?? null,
                section: c.section?.slice(0, 1000) ?? null,
                source: source.slice(0, 2000),
                page: c.page
              })
            }
            for (let i = 0; i < points.length; i += BATCH) {
              const batch = points.slice(i, i + BATCH)
              const stored = new Map(
                (yield* knowledge.stored(tableId, batch.map((p) => p.default_id as string))).map((
                  r
                ) => [r.default_id, r])
              )
              const changed = batch.filter((p) => {
                const before = stored.get(p.default_id as string)?.data
                return before === undefined || COLUMNS.some((k) => (before[k] ?? null) !== p[k])
              })
              if (changed.length > 0) {
                yield* upserts.upsert(tableId, changed).pipe(
                  Effect.provideService(CurrentActor, actorFor(s.workspace_id)),
                  Effect.catchAll((e) => new SyncFailed({ message: e.message }))
                )
              }
              yield* renew
            }
            pages += 1
            yield* renew
          })

        if (s.kind === "file") {
          const blob = s.file_path === null ? Option.none() : yield* storage.blob(s.file_path, s.mimetype ?? "")
          if (Option.isNone(blob)) return yield* new SyncFailed({ message: "The uploaded file is no longer stored." })
          const bytes = new Uint8Array(yield* Effect.promise(() => blob.value.arrayBuffer()))
          const doc = yield* documentOf(bytes, s.mimetype ?? "application/octet-stream", s.name).pipe(
            Effect.catchAll((e) => new SyncFailed({ message: e.message }))
          )
          total = 1
          yield* write(s.name, doc)
        } else {
          yield* fetcher.pages({
            kind: s.kind,
            url: s.url ?? "",
            maxPages: s.settings.max_pages ?? DEFAULT_MAX_PAGES,
            maxDepth: s.settings.max_depth ?? DEFAULT_MAX_DEPTH,
            include: s.settings.include ?? [],
            exclude: s.settings.exclude ?? []
          }).pipe(
            Stream.mapError((e) => new SyncFailed({ message: e.message })),
            Stream.runForEach((item) =>
              Predicate.isTagged(item, "FetchFailed")
                ? Effect.sync(() => failedPages.push(item as FetchFailed))
                : write(item.url, item.document)
            )
          )
          if (pages === 0 && failedPages.length > 0) return yield* new SyncFailed({ message: failedPages[0]!.message })
        }

        // a page that failed this time keeps the points it had
        const kept = new Set(failedPages.map((f) => f.url))
        const before = yield* repo.points(tableId, s.id)
        const stale = before.filter((p) => !seen.has(p.default_id) && !(p.source !== null && kept.has(p.source)))
        yield* deleteAll(tableId, stale.map((p) => p.default_id))
        const after = yield* repo.points(tableId, s.id)
        const note = failedPages.length === 0
          ? null
          : `${failedPages.length} page(s) could not be read; the first: ${failedPages[0]!.message}`
        yield* repo.finish(s, { _tag: "ready", points: after.length, pages, note })
      })

    /** One claimed source synced to its end, whatever happens: a defect is a `failed` source, not a dead loop. */
    const runOne = (s: ClaimedSource, leaseMs: number) =>
      sync(s, leaseMs).pipe(
        Effect.catchTags({
          SyncFailed: (e) => repo.finish(s, { _tag: "failed", error: e.message }),
          SourceGone: () =>
            Effect.flatMap(
              repo.points(s.knowledge_table_id, s.id),
              (points) => deleteAll(s.knowledge_table_id, points.map((p) => p.default_id))
            )
        }),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ?
            Effect.failCause(cause) :
            Effect.logError("Syncing a knowledge source failed", cause).pipe(
              Effect.zipRight(
                repo.finish(s, { _tag: "failed", error: "The source could not be read (internal error)." })
              )
            )
        ),
        Effect.annotateLogs({ knowledge_source_id: s.id, knowledge_table_id: s.knowledge_table_id }),
        Effect.withSpan("SourceIngest.sync", { attributes: { knowledge_source_id: s.id, kind: s.kind } })
      )

    /** Every due source (those whose schedule came round made due first), one after another. */
    const sweep = (leaseMs: number) =>
      Effect.gen(function*() {
        yield* repo.scheduleDue
        for (;;) {
          const claimed = yield* repo.claim(leaseMs)
          if (Option.isNone(claimed)) return
          yield* runOne(claimed.value, leaseMs)
        }
      })

    return { sweep }
  })
}) {}

/** The runner: one per cluster, polling for due sources (`KNOWLEDGE_SOURCES_POLL_MS`, lease `..._LEASE_MS`). */
export const SourceIngestLive = Singleton.make(
  "Knowledge/source-ingest",
  Effect.gen(function*() {
    const every = yield* Config.integer("KNOWLEDGE_SOURCES_POLL_MS").pipe(Config.withDefault(1_000))
    const leaseMs = yield* Config.integer("KNOWLEDGE_SOURCES_LEASE_MS").pipe(Config.withDefault(120_000))
    const ingest = yield* SourceIngest
    yield* ingest.sweep(leaseMs).pipe(
      Effect.catchAllCause(Effect.logError),
      Effect.repeat(Schedule.spaced(Duration.millis(every)))
    )
  }).pipe(Effect.orDie, Effect.asVoid)
).pipe(Layer.provide(SourceIngest.Default))
