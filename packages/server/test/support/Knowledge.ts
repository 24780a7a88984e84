/**
 * What an agent may say lives in knowledge, not in its instructions (docs/agent.md): tests that expect a
 * reply to carry a fact give the pipeline a knowledge table of it, over REST as an owner would.
 */
import { Effect } from "effect"
import { type Caller, ok, post, put } from "./Opportunities.js"
import { giveCredits } from "./TestServer.js"

/** A knowledge table of `rows` (one `answer` column, searched and said), made in the owner's workspace. */
export const knowledgeTable = (
  owner: Caller & { readonly workspace_id: number },
  rows: ReadonlyArray<string>,
  name = "Facts"
) =>
  Effect.gen(function*() {
    yield* giveCredits(owner.workspace_id, { training_credits: 1_000 })
    const table = ok(
      yield* post(owner, "/api/user/knowledge-tables", {
        name: `${name} ${Math.random().toString(36).slice(2, 8)}`,
        columns: [{
          name: "answer",
          data_type: "string",
          order: 1,
          is_searchable: true,
          is_retrievable: true,
          is_filterable: false,
          is_unique: false
        }]
      }),
      "knowledge.create"
    )
    ok(
      yield* put(owner, `/api/user/knowledge-tables/${table.id}/points`, {
        points: rows.map((answer, i) => ({ default_id: `fact-${i + 1}`, answer }))
      }),
      "knowledge.upsert"
    )
    return table.id
  })

/** `rows` as the pipeline's knowledge: a table of them attached, searched (hybrid) for every reply. */
export const withKnowledge = (
  owner: Caller & { readonly workspace_id: number },
  pipelineId: number,
  rows: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    const table = yield* knowledgeTable(owner, rows)
    ok(
      yield* put(owner, `/api/user/pipelines/${pipelineId}`, {
        rag_mode: "hybrid",
        no_of_relevant_points: Math.min(rows.length, 5),
        attach_knowledge_table_ids: [table]
      }),
      "pipelines.update"
    )
    return table
  })
