/**
 * The knowledge page (docs/console.md, "Knowledge"): the chosen workspace's knowledge tables with their points and
 * sources, and a form for a new document table. A table's own page (KnowledgeTable.tsx) takes files and URLs, shows
 * their syncs and searches the table. The page needs `knowledge:read`: the nav hides it without, and a direct link
 * says so instead of showing the server's 403.
 */
import { useEffect } from "preact/hooks"
import { NewTable } from "./KnowledgeForms.js"
import { knowledgeReadable, knowledgeWritable, loadTables, sourceCounts, tables } from "./knowledgeStore.js"
import { KnowledgeTable } from "./KnowledgeTable.js"
import { fail, navigate, workspaceId } from "./state.js"

export { knowledgeReadable } from "./knowledgeStore.js"

const TableList = () => {
  const workspace = workspaceId.value
  useEffect(() => void loadTables().catch(fail), [workspace])
  const list = tables.value
  return (
    <section class="channels-page knowledge-page" aria-labelledby="knowledge-title">
      <h2 id="knowledge-title">Knowledge</h2>
      <p class="hint">
        The tables the agents search. Open one to add files and web pages to it, watch them sync, and search it.
      </p>
      {list === undefined ?
        <p class="boot">Loading…</p> :
        list.length === 0 ?
        <p class="empty">No tables yet.</p> :
        (
          <div class="table-wrap">
            <table class="knowledge-tables">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Points</th>
                  <th scope="col">Sources</th>
                </tr>
              </thead>
              <tbody>
                {list.map((t) => (
                  <tr key={t.id} data-id={t.id}>
                    <td>
                      <a
                        href={`/console/knowledge/${t.id}`}
                        onClick={(e) => (e.preventDefault(), navigate({ page: "knowledge", tableId: t.id }))}
                      >
                        {t.name}
                      </a>
                      {t.description !== null && <span class="hint">{t.description}</span>}
                    </td>
                    <td>{t.points_count.toLocaleString("en")}</td>
                    <td>{sourceCounts.value[t.id] ?? "…"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      {knowledgeWritable.value && <NewTable onCreated={(t) => navigate({ page: "knowledge", tableId: t.id })} />}
    </section>
  )
}

export const Knowledge = ({ tableId }: { tableId?: number | undefined }) =>
  !knowledgeReadable.value
    ? (
      <section class="channels-page knowledge-page">
        <h2>Knowledge</h2>
        <p class="empty">This console may not read knowledge tables (it needs the scope knowledge:read).</p>
      </section>
    )
    : tableId === undefined
    ? <TableList />
    : <KnowledgeTable key={tableId} id={tableId} />
