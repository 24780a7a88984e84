/**
 * A knowledge table's page (docs/console.md, "Knowledge"): its sources with their status, progress, points, error and
 * schedule, polled while one is pending or syncing and no longer once none is; sync one now or delete it (after a
 * confirmation: its points go with it); add files and URLs (KnowledgeForms.tsx); search the table
 * (KnowledgeSearch.tsx).
 */
import { useSignal } from "@preact/signals"
import { useEffect, useRef } from "preact/hooks"
import { api, type KnowledgeSourceRecord } from "./api.js"
import { now, since } from "./format.js"
import { AddUrl, DropFiles } from "./KnowledgeForms.js"
import { KnowledgeSearch } from "./KnowledgeSearch.js"
import {
  knowledgeWritable,
  loadSources,
  loadTable,
  missingDocumentColumns,
  sources,
  syncing,
  table
} from "./knowledgeStore.js"
import { fail, navigate, say, workspaceId } from "./state.js"

/** How often the page asks for the sources while one syncs: often enough for a progress bar, cheap for the server. */
const POLL_MS = 1_000

const KIND: Record<KnowledgeSourceRecord["kind"], string> = {
  file: "File",
  url: "Page",
  sitemap: "Sitemap",
  crawl: "Crawl"
}
const STATUS: Record<KnowledgeSourceRecord["status"], string> = {
  pending: "Waiting",
  processing: "Syncing",
  ready: "Ready",
  failed: "Failed"
}
const SCHEDULE = { off: "On demand", daily: "Daily", weekly: "Weekly" } as const

const lastSync = (iso: string) => (now.value - Date.parse(iso) < 60_000 ? "just now" : `${since(iso)} ago`)

/** The sync's pages so far: a bar with its end once the total is known, an open one before. */
const Progress = ({ s }: { s: KnowledgeSourceRecord }) => {
  const p = s.progress
  if (s.status === "processing" && p !== null) {
    const label = p.total === null ? `${p.done} pages so far` : `${p.done} of ${p.total} pages`
    return (
      <span class="progress">
        {p.total === null
          ? <progress aria-label={label} />
          : <progress value={p.done} max={p.total} aria-label={label} />}
        <span>{label}</span>
      </span>
    )
  }
  if (s.status === "processing" || s.status === "pending") return <progress aria-label={STATUS[s.status]} />
  return <span>{s.pages === 1 ? "1 page" : `${s.pages} pages`}</span>
}

const SourceRow = ({ tableId, s }: { tableId: number; s: KnowledgeSourceRecord }) => {
  const confirming = useSignal(false)
  const path = `knowledge-tables/${tableId}/sources/${s.id}`
  const done = () => Promise.all([loadSources(tableId), loadTable(tableId)])
  const syncNow = () => api("POST", `${path}/sync`).then(() => (say(`Syncing ${s.name}.`), done()), fail)
  const remove = () =>
    api<{ deleted: number }>("DELETE", path).then(
      (r) => (say(`${s.name} deleted with its ${r.deleted} points.`), done()),
      fail
    )
  return (
    <tr data-id={s.id} data-status={s.status}>
      <td>{KIND[s.kind]}</td>
      <td class="source-name">
        {s.url === null ? s.name : <a href={s.url} target="_blank" rel="noopener noreferrer">{s.name}</a>}
      </td>
      <td>
        <span class="source-status" data-status={s.status}>{STATUS[s.status]}</span>
        {s.error !== null && <p class="error source-error">{s.error}</p>}
      </td>
      <td>
        <Progress s={s} />
      </td>
      <td class="points">{s.points.toLocaleString("en")}</td>
      <td>{s.last_synced_at === null ? "Never" : lastSync(s.last_synced_at)}</td>
      <td>{s.kind === "file" ? "On demand" : SCHEDULE[s.sync]}</td>
      {knowledgeWritable.value && (
        <td class="source-actions">
          {confirming.value
            ? (
              <span role="group" aria-label={`Delete ${s.name}?`}>
                Delete with its {s.points} points?{" "}
                <button type="button" class="danger" onClick={() => void remove()}>Delete</button>
                <button type="button" onClick={() => (confirming.value = false)}>Cancel</button>
              </span>
            )
            : (
              <>
                <button type="button" aria-label={`Sync ${s.name} now`} onClick={() => void syncNow()}>
                  Sync now
                </button>
                <button type="button" aria-label={`Delete ${s.name}`} onClick={() => (confirming.value = true)}>
                  Delete
                </button>
              </>
            )}
        </td>
      )}
    </tr>
  )
}

const Sources = ({ id }: { id: number }) => {
  const list = sources.value.tableId === id ? sources.value.list : []
  return list.length === 0 ? <p class="empty">No sources yet: drop a file or add a URL.</p> : (
    <div class="table-wrap">
      <table class="knowledge-sources" aria-label="Sources">
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col">Source</th>
            <th scope="col">Status</th>
            <th scope="col">Pages</th>
            <th scope="col">Points</th>
            <th scope="col">Last sync</th>
            <th scope="col">Sync</th>
            {knowledgeWritable.value && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {list.map((s) => <SourceRow key={s.id} tableId={id} s={s} />)}
        </tbody>
      </table>
    </div>
  )
}

export const KnowledgeTable = ({ id }: { id: number }) => {
  // another workspace chosen in the header: its tables, not this one
  const workspace = workspaceId.value
  const opened = useRef(workspace)
  useEffect(() => void (workspace !== opened.current && navigate({ page: "knowledge" })), [workspace])

  useEffect(() => {
    table.value = undefined
    void Promise.all([loadTable(id), loadSources(id)]).catch(fail)
  }, [id])

  // poll while a source syncs; once none does, the table's points count is read again
  const active = syncing.value
  useEffect(() => {
    if (!active) return void (table.value?.id === id && loadTable(id).catch(fail))
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const tick = () =>
      loadSources(id).then(
        () => void (stopped || (timer = setTimeout(tick, POLL_MS))),
        (e) => (stopped || fail(e))
      )
    timer = setTimeout(tick, POLL_MS)
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }, [id, active])

  const t = table.value?.id === id ? table.value : undefined
  const missing = t === undefined ? [] : missingDocumentColumns(t)
  // the table too: a source that synced before this answer leaves no poll to read its points
  const reload = () => void Promise.all([loadSources(id), loadTable(id)]).catch(fail)
  return (
    <section class="channels-page knowledge-page" aria-labelledby="knowledge-table-title">
      <a href="/console/knowledge" onClick={(e) => (e.preventDefault(), navigate({ page: "knowledge" }))}>
        ← Knowledge
      </a>
      <h2 id="knowledge-table-title">{t?.name ?? "Knowledge table"}</h2>
      {t !== undefined && (
        <p class="hint">
          <span class="table-points">{t.points_count.toLocaleString("en")} points</span>
          {t.description !== null && ` · ${t.description}`}
        </p>
      )}
      {missing.length > 0 && (
        <p class="hint" role="note">
          Sources need the document columns; this table lacks {missing.join(", ")}.
        </p>
      )}
      <h3>Sources</h3>
      <Sources id={id} />
      {knowledgeWritable.value && (
        <div class="knowledge-add">
          <DropFiles tableId={id} onAdded={reload} />
          <AddUrl tableId={id} onAdded={reload} />
        </div>
      )}
      <KnowledgeSearch table={t} />
    </section>
  )
}
