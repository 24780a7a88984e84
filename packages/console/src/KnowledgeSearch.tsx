/**
 * A knowledge table's search (KnowledgeTable.tsx): the table's own `POST .../search`, hybrid by default, so the
 * operator sees what the agent would find for a question: each hit's score and its retrievable columns (for a document
 * table its text, title, section, source and page).
 */
import { useSignal } from "@preact/signals"
import { api, type KnowledgeSearchResults, type KnowledgeTableRecord } from "./api.js"
import { fail } from "./state.js"

/** A long chunk is cut in the cell; the whole text is its tooltip. */
const cell = (value: unknown) => {
  if (value === null || value === undefined || value === "") return "—"
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return text.length > 400 ? `${text.slice(0, 400)}…` : text
}

export const KnowledgeSearch = ({ table }: { table: KnowledgeTableRecord | undefined }) => {
  const results = useSignal<KnowledgeSearchResults | undefined>(undefined)
  const searching = useSignal(false)
  const columns = (table?.columns ?? []).filter((c) => c.is_retrievable).sort((a, b) => a.order - b.order)
  const submit = (e: Event) => {
    e.preventDefault()
    if (table === undefined) return
    const form = new FormData(e.currentTarget as HTMLFormElement)
    const query = String(form.get("query") ?? "").trim()
    if (query === "") return
    searching.value = true
    api<KnowledgeSearchResults>("POST", `knowledge-tables/${table.id}/search`, {
      json: { query, limit: 10, use_hybrid: form.get("vector_only") !== "on" }
    }).then((r) => (results.value = r), fail).finally(() => (searching.value = false))
  }
  const r = results.value
  return (
    <section class="knowledge-search" aria-labelledby="knowledge-search-title">
      <h3 id="knowledge-search-title">Search this table</h3>
      <form class="inline" role="search" onSubmit={submit}>
        <label for="knowledge-query" class="visually-hidden">Search query</label>
        <input id="knowledge-query" type="search" name="query" placeholder="What a contact might ask" />
        <label class="check">
          <input type="checkbox" name="vector_only" /> Vectors only
        </label>
        <button type="submit" disabled={searching.value || table === undefined}>Search</button>
      </form>
      {r !== undefined && (
        <div role="status">
          <p class="hint">
            {r.results.length === 0 ? "No hits" : `${r.results.length} hit${r.results.length === 1 ? "" : "s"}`}{" "}
            for “{r.query}” ({r.mode === "hybrid" ? "hybrid: vectors and keywords, ranks fused" : "vectors, cosine"}).
          </p>
          {r.results.length > 0 && (
            <div class="table-wrap">
              <table class="knowledge-hits" aria-label="Search results">
                <thead>
                  <tr>
                    <th scope="col">Score</th>
                    {columns.map((c) => <th key={c.id} scope="col">{c.name}</th>)}
                  </tr>
                </thead>
                <tbody>
                  {r.results.map((hit) => (
                    <tr key={hit.point_id} data-id={hit.default_id}>
                      <td class="score">{hit.score.toFixed(r.mode === "hybrid" ? 4 : 3)}</td>
                      {columns.map((c) => {
                        const value = hit.data[c.name]
                        return (
                          <td key={c.id} data-column={c.name} title={typeof value === "string" ? value : undefined}>
                            {cell(value)}
                          </td>
                        )
                      })}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
    </section>
  )
}
