/**
 * Knowledge sources (issue 41): files and web pages whose chunks become points of a knowledge table, synced in the
 * background by the SyncKnowledgeSource workflow (SourceDispatch.ts, SourceSteps.ts). Scoped by the table's
 * workspace: another workspace's table, or a source of another table, is "not found". A table takes sources only
 * with the document columns (DOCUMENT_COLUMNS; a table created over REST without columns has them): adding a source
 * to a table of other columns is a 422 naming each missing one, rather than columns added behind the caller's back.
 */
import type { Multipart } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import {
  type CreateWebSource,
  CurrentActor,
  DOCUMENT_COLUMNS,
  type KnowledgeColumn,
  type KnowledgeSource,
  KnowledgeSourceNotFound,
  type KnowledgeTableId,
  KnowledgeTableNotFound,
  storableName,
  ulid,
  Unprocessable
} from "@parley/domain"
import { Effect, Option } from "effect"
import { FileStorage } from "../files/FileStorage.js"
import { someOrFail } from "../util/Effects.js"
import { KnowledgeRepo } from "./KnowledgeRepo.js"
import { SourcesRepo } from "./SourcesRepo.js"
import { SourceWrite } from "./SourceWrite.js"
import { KnowledgeStatistics } from "./Statistics.js"

/** Defaults of a web source's limits (docs/api.md, "Knowledge sources"). */
export const DEFAULT_MAX_PAGES = 100
export const DEFAULT_MAX_DEPTH = 3

const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

/** What the table lacks to take chunks: one problem per missing or mistyped document column. */
export const missingDocumentColumns = (columns: ReadonlyArray<KnowledgeColumn>) =>
  DOCUMENT_COLUMNS.flatMap((wanted) => {
    const found = columns.find((c) => c.name === wanted.name)
    const expected = `a ${wanted.data_type} column \`${wanted.name}\`${wanted.searchable ? " (searchable)" : ""}`
    if (!found) return [{ field: `columns.${wanted.name}`, message: `is missing: the table needs ${expected}` }]
    if (found.data_type !== wanted.data_type || (wanted.searchable && !found.is_searchable)) {
      return [{ field: `columns.${wanted.name}`, message: `must be ${expected}` }]
    }
    return []
  })

const webUrl = (raw: string) => {
  try {
    const url = new URL(raw)
    return url.protocol === "http:" || url.protocol === "https:" ? Option.some(url.href) : Option.none()
  } catch {
    return Option.none<string>()
  }
}

export class Sources extends Effect.Service<Sources>()("@parley/server/Sources", {
  dependencies: [
    SourcesRepo.Default,
    KnowledgeRepo.Default,
    KnowledgeStatistics.Default,
    FileStorage.Default,
    SourceWrite.Default
  ],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* SourcesRepo
    const knowledge = yield* KnowledgeRepo
    const statistics = yield* KnowledgeStatistics
    const storage = yield* FileStorage
    const writer = yield* SourceWrite

    /** The table's workspace and columns when the caller reaches it; 404 otherwise. */
    const ownTable = (id: KnowledgeTableId) =>
      Effect.flatMap(CurrentActor, (actor) => knowledge.columns(id, actor.workspaceIds)).pipe(
        someOrFail(() => new KnowledgeTableNotFound())
      )

    const get = Effect.fn("Sources.get")(function*(tableId: KnowledgeTableId, id: number) {
      yield* ownTable(tableId)
      return yield* repo.get(tableId, id).pipe(someOrFail(() => new KnowledgeSourceNotFound()))
    })

    const list = Effect.fn("Sources.list")(function*(tableId: KnowledgeTableId) {
      yield* ownTable(tableId)
      return yield* repo.list(tableId)
    })

    /** A file (stored first: the multipart temp file goes with the request) or a web source, `pending`. */
    const create = Effect.fn("Sources.create")(
      function*(tableId: KnowledgeTableId, input: { readonly file: Multipart.PersistedFile } | CreateWebSource) {
        const table = yield* ownTable(tableId)
        const missing = missingDocumentColumns(table.columns)
        if (missing.length > 0) return yield* Unprocessable.of(missing)
        const common = { tableId, workspaceId: table.workspace_id }
        let created: KnowledgeSource
        if ("file" in input) {
          const name = storableName(input.file.name).slice(0, 255) || "file"
          const key = `knowledge/${table.workspace_id}/${ulid()}/${safeName(input.file.name)}`
          yield* storage.putFromPath(key, input.file.path)
          created = yield* repo.insert({
            ...common,
            kind: "file",
            name,
            url: null,
            filePath: key,
            mimetype: storableName(input.file.contentType) || "application/octet-stream",
            settings: {},
            sync: "off"
          })
        } else {
          const url = webUrl(input.url)
          if (Option.isNone(url)) {
            return yield* Unprocessable.of([{ field: "url", message: "must be an http or https URL" }])
          }
          created = yield* repo.insert({
            ...common,
            kind: input.kind,
            name: url.value,
            url: url.value,
            filePath: null,
            mimetype: null,
            settings: {
              max_pages: input.kind === "url" ? 1 : input.max_pages ?? DEFAULT_MAX_PAGES,
              max_depth: input.max_depth ?? DEFAULT_MAX_DEPTH,
              include: input.include ?? [],
              exclude: input.exclude ?? []
            },
            sync: input.sync ?? "off"
          })
        }
        return created
      }
    )

    /** `pending` again (or, while a sync runs, once more after it). */
    const sync = Effect.fn("Sources.sync")(function*(tableId: KnowledgeTableId, id: number) {
      yield* ownTable(tableId)
      if (!(yield* repo.requestSync(tableId, id))) return yield* new KnowledgeSourceNotFound()
      return yield* repo.get(tableId, id).pipe(someOrFail(() => new KnowledgeSourceNotFound()))
    })

    /** The source and its points in one transaction; its stored file after. */
    const remove = Effect.fn("Sources.remove")(function*(tableId: KnowledgeTableId, id: number) {
      yield* ownTable(tableId)
      const gone = yield* sql.withTransaction(Effect.gen(function*() {
        const removed = yield* repo.remove(tableId, id)
        if (Option.isNone(removed)) return Option.none()
        const points = yield* repo.points(tableId, id)
        const deleted = yield* writer.remove(tableId, points.map((p) => p.default_id))
        return Option.some({ file: removed.value, deleted })
      })).pipe(Effect.orDie, someOrFail(() => new KnowledgeSourceNotFound()))
      if (gone.file !== null) yield* storage.remove(gone.file)
      yield* statistics.changedRows(gone.deleted)
      return { deleted: gone.deleted }
    })

    return { list, get, create, sync, remove }
  })
}) {}
