/**
 * The knowledge pages' state (Knowledge.tsx, KnowledgeTable.tsx): the workspace's tables with their sources counts,
 * the open table and its sources. What the console may do here follows its token's scopes, read from `me`, so a
 * console without `knowledge:read` shows no knowledge page rather than the server's 403.
 */
import { computed, signal } from "@preact/signals"
import { api, type KnowledgeSourceRecord, type KnowledgeTableRecord } from "./api.js"
import { me, workspaceId } from "./state.js"

type Scope = MeScopes[number]
type MeScopes = NonNullable<typeof me.value>["token"]["scopes"]

const granted = (scope: Scope) => computed(() => me.value?.token.scopes.includes(scope) === true)
export const knowledgeReadable = granted("knowledge:read")
export const knowledgeWritable = granted("knowledge:write")

export const tables = signal<ReadonlyArray<KnowledgeTableRecord> | undefined>(undefined)
export const sourceCounts = signal<Readonly<Record<number, number>>>({})

/** The chosen workspace's tables (the API lists every workspace's the user reaches), then their sources counts. */
export const loadTables = async () => {
  const all = await api<ReadonlyArray<KnowledgeTableRecord>>("GET", "knowledge-tables")
  const own = all.filter((t) => t.workspace_id === workspaceId.value)
  tables.value = own
  const counts = await Promise.all(
    own.map((t) => api<ReadonlyArray<unknown>>("GET", `knowledge-tables/${t.id}/sources`).then((s) => [t.id, s.length]))
  )
  sourceCounts.value = Object.fromEntries(counts)
}

export const table = signal<KnowledgeTableRecord | undefined>(undefined)
/** The open table's sources; `tableId` keeps a slow answer for the previous table from showing on this one. */
export const sources = signal<{ readonly tableId: number; readonly list: ReadonlyArray<KnowledgeSourceRecord> }>({
  tableId: 0,
  list: []
})

export const loadTable = (id: number) =>
  api<KnowledgeTableRecord>("GET", `knowledge-tables/${id}`).then((t) => (table.value = t))

export const loadSources = (id: number) =>
  api<ReadonlyArray<KnowledgeSourceRecord>>("GET", `knowledge-tables/${id}/sources`).then((list) => {
    sources.value = { tableId: id, list }
  })

/** Whether a source of the open table is still to sync or syncing: the page polls while one is. */
export const syncing = computed(() =>
  sources.value.list.some((s) => s.status === "pending" || s.status === "processing")
)

/** The document columns a table needs to take sources (docs/knowledge.md), missing from `t`. */
export const missingDocumentColumns = (t: KnowledgeTableRecord) =>
  ["text", "title", "section", "source", "page"].filter((name) => !t.columns.some((c) => c.name === name))
