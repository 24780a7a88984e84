/**
 * MCP resources (issue 23): a pipeline's whole configuration and a knowledge table's columns, as JSON a
 * client can attach to a conversation without a tool call. The same documents as `get_pipeline` and
 * `list_knowledge_tables`, under the same scopes (`mcp:use` reads pipelines, `knowledge:read` tables).
 */
import type {
  ListResourcesResult,
  ListResourceTemplatesResult,
  ReadResourceResult
} from "@modelcontextprotocol/sdk/types.js"
import {
  CurrentActor,
  hasScope,
  KnowledgeTableIdFromString,
  missingScopeMessage,
  PipelineIdFromString,
  type Scope
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { McpBackend } from "./Backend.js"
import { pipelineDocument } from "./PipelineDocument.js"

/** A JSON-RPC error of a resource request: MCP's "resource not found", or a scope the token lacks. */
export class ResourceError {
  constructor(readonly code: number, readonly message: string) {}
}

const RESOURCE_NOT_FOUND = -32002
const FORBIDDEN = -32003

const json = "application/json"
const pipelineUri = (id: number) => `parley://pipelines/${id}`
const columnsUri = (id: number) => `parley://knowledge-tables/${id}/columns`

export const resourceTemplates: ListResourceTemplatesResult = {
  resourceTemplates: [
    {
      uriTemplate: "parley://pipelines/{pipeline_id}",
      name: "pipeline",
      title: "Pipeline configuration",
      description:
        "A pipeline's settings, stages, variables, actions, followups and attached knowledge tables (as get_pipeline answers).",
      mimeType: json
    },
    {
      uriTemplate: "parley://knowledge-tables/{knowledge_table_id}/columns",
      name: "knowledge_table_columns",
      title: "Knowledge table columns",
      description:
        "A knowledge table's columns: the keys upsert_knowledge_points expects, their types and search roles. Needs knowledge:read.",
      mimeType: json
    }
  ]
}

const allowed = (scope: Scope) => Effect.map(CurrentActor, (actor) => hasScope(actor.scopes, scope))

/** Every pipeline, and every knowledge table's columns when the token may read knowledge. */
export const listResources: Effect.Effect<ListResourcesResult, never, McpBackend | CurrentActor> = Effect.gen(
  function*() {
    const b = yield* McpBackend
    const pipelines = yield* Effect.orElseSucceed(b.listPipelines(), () => [])
    const tables = (yield* allowed("knowledge:read"))
      ? yield* Effect.orElseSucceed(b.listKnowledgeTables(), () => [])
      : []
    return {
      resources: [
        ...pipelines.map((p) => ({
          uri: pipelineUri(p.id),
          name: `pipeline-${p.id}`,
          title: `Pipeline ${p.name}`,
          mimeType: json
        })),
        ...tables.map((t) => ({
          uri: columnsUri(t.id),
          name: `knowledge-table-${t.id}-columns`,
          title: `Columns of ${t.name}`,
          mimeType: json
        }))
      ]
    }
  }
)

const contents = (uri: string, value: unknown): ReadResourceResult => ({
  contents: [{ uri, mimeType: json, text: JSON.stringify(value) }]
})

const require = (scope: Scope) =>
  Effect.flatMap(
    allowed(scope),
    (ok) => (ok ? Effect.void : Effect.fail(new ResourceError(FORBIDDEN, missingScopeMessage(scope))))
  )

export const readResource = (
  uri: string
): Effect.Effect<ReadResourceResult, ResourceError, McpBackend | CurrentActor> => {
  const notFound = new ResourceError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`)
  const pipeline = /^parley:\/\/pipelines\/([1-9]\d{0,15})$/.exec(uri)
  if (pipeline !== null) {
    return require("pipelines:read").pipe(
      Effect.zipRight(
        Effect.mapError(
          Effect.flatMap(Schema.decodeUnknown(PipelineIdFromString)(pipeline[1]), pipelineDocument),
          () => notFound
        )
      ),
      Effect.map((doc) => contents(uri, doc))
    )
  }
  const columns = /^parley:\/\/knowledge-tables\/([1-9]\d{0,15})\/columns$/.exec(uri)
  if (columns !== null) {
    const id = Schema.decodeUnknownOption(KnowledgeTableIdFromString)(columns[1])
    return require("knowledge:read").pipe(
      Effect.zipRight(Effect.flatMap(McpBackend, (b) => Effect.orElseSucceed(b.listKnowledgeTables(), () => []))),
      Effect.flatMap((tables) => {
        const table = Option.isNone(id) ? undefined : tables.find((t) => t.id === id.value)
        return table === undefined
          ? Effect.fail(notFound)
          : Effect.succeed(contents(uri, { knowledge_table_id: table.id, name: table.name, columns: table.columns }))
      })
    )
  }
  return Effect.fail(notFound)
}
