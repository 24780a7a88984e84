/**
 * A pipeline's whole configuration in one JSON document: what `get_pipeline` answers and the resource
 * `parley://pipelines/{id}` holds. The parts are the REST records (docs/api.md).
 */
import type { PipelineId } from "@parley/domain"
import { Effect } from "effect"
import { McpBackend } from "./Backend.js"
import { describe, integers, object, objects } from "./Output.js"

export const PipelineDocumentFields = {
  pipeline: describe(object, "Settings, Smart Routing (is_model_routing) and stages in order"),
  variables: objects,
  actions: objects,
  followups: describe(objects, "One per stage that has a followup (stage_id)"),
  knowledge_table_ids: describe(integers, "Attached knowledge tables")
}

export const pipelineDocument = (id: PipelineId) =>
  Effect.gen(function*() {
    const b = yield* McpBackend
    const pipeline = yield* b.getPipeline(id)
    const [variables, actions, tables, followups] = yield* Effect.all([
      b.listVariables(id, undefined),
      b.listActions(id, undefined),
      b.listKnowledgeTables(),
      Effect.forEach(pipeline.stages, (s) => b.stageFollowup(s.id))
    ])
    return {
      pipeline,
      variables,
      actions,
      followups: followups.flatMap((f) => (f.followup === null ? [] : [f.followup])),
      knowledge_table_ids: tables.filter((t) => t.pipeline_ids.includes(id)).map((t) => t.id)
    }
  })
