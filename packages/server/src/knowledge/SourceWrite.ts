/**
 * A source's document as points (issue 41): its chunks, each a point with `default_id` `src{source}-{hash}` where the
 * hash is of the chunk and the page or file it came from (so one paragraph on two pages is two points, each citing its
 * page), upserted through the REST upsert's own path (PointUpserts.ts: the same validation, embedding, credits and
 * search). A chunk already stored with the same columns is not written again, so not embedded again.
 */
import { type Actor, CurrentActor, type KnowledgeTableId, Scopes, type UserId, type WorkspaceId } from "@parley/domain"
import { Data, Effect } from "effect"
import { createHash } from "node:crypto"
import { breathe } from "../util/Effects.js"
import { chunk, type ChunkOptions, type SourceDocument } from "./Chunker.js"
import { KnowledgeRepo } from "./KnowledgeRepo.js"
import { PointUpserts } from "./PointUpserts.js"
import { pointPrefix } from "./SourcesRepo.js"

/** Chunks per upsert: one embedding request each. */
const BATCH = 64
/** Point ids per delete statement. */
const DELETE_BATCH = 5_000

/** The reason a sync ends `failed`, in words for the source's `error`. */
export class SyncFailed extends Data.TaggedError("SyncFailed")<{ readonly message: string }> {}
/** The run is no longer the source's (deleted, or taken over): what it was doing stops. */
export class RunEnded extends Data.TaggedError("RunEnded") {}

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

export interface WriteTarget {
  readonly sourceId: number
  readonly tableId: number
  readonly workspaceId: number
}

export class SourceWrite extends Effect.Service<SourceWrite>()("@parley/server/SourceWrite", {
  dependencies: [KnowledgeRepo.Default, PointUpserts.Default],
  effect: Effect.gen(function*() {
    const knowledge = yield* KnowledgeRepo
    const upserts = yield* PointUpserts

    /**
     * `doc`'s chunks as points of the target's table, `source` (a URL or a file name) in their `source` column; the ids
     * of its points, written or already stored. `alive` runs after each batch and stops the write once the run ended.
     */
    const write = Effect.fn("SourceWrite.write")(function*<E>(
      target: WriteTarget,
      source: string,
      doc: SourceDocument,
      options: ChunkOptions,
      alive: Effect.Effect<void, E>
    ) {
      const tableId = target.tableId as KnowledgeTableId
      const ids = new Set<string>()
      const points: Array<Record<string, string | number | null>> = []
      for (const c of chunk(doc, options)) {
        const hash = createHash("sha256").update(`${source}\n${c.hash}`).digest("hex")
        const id = `${pointPrefix(target.sourceId)}${hash.slice(0, 16)}`
        if (ids.has(id)) continue
        ids.add(id)
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
          (yield* knowledge.stored(tableId, batch.map((p) => p.default_id as string))).map((r) => [r.default_id, r])
        )
        const changed = batch.filter((p) => {
          const before = stored.get(p.default_id as string)?.data
          return before === undefined || COLUMNS.some((k) => (before[k] ?? null) !== p[k])
        })
        if (changed.length > 0) {
          yield* upserts.upsert(tableId, changed).pipe(
            Effect.provideService(CurrentActor, actorFor(target.workspaceId)),
            Effect.catchAll((e) => new SyncFailed({ message: e.message }))
          )
        }
        yield* alive
        yield* breathe
      }
      return [...ids]
    })

    /** Deletes the points `ids` of the table, in statements of a bounded size; how many were. */
    const remove = (tableId: number, ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        let deleted = 0
        for (let i = 0; i < ids.length; i += DELETE_BATCH) {
          deleted += yield* knowledge.deletePoints(tableId, ids.slice(i, i + DELETE_BATCH))
        }
        return deleted
      })

    return { write, remove }
  })
}) {}
