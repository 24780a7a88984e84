/**
 * Knowledge tables and their points (SPEC.md 4.5): `knowledge:read` to read, `knowledge:write` to change, as on REST.
 */
import {
  CreateKnowledgeTable,
  DeletePoints,
  KnowledgeTableId,
  SearchKnowledge,
  SearchResults,
  UpsertPoints
} from "@parley/domain"
import { IntBetween } from "@parley/domain/Schemas"
import { Effect, Schema, Struct } from "effect"
import { McpBackend } from "../Backend.js"
import {
  describe,
  integer,
  nextSteps,
  nullable,
  object,
  objects,
  paged,
  paginate,
  result,
  resultOf,
  string
} from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, paging, required, withDefault } from "../ToolFields.js"

const knowledgeTableId = required(KnowledgeTableId, "From list_knowledge_tables")

export const knowledgeTools: ReadonlyArray<Tool> = [
  tool({
    name: "list_knowledge_tables",
    title: "List knowledge tables",
    group: "discover",
    scope: "knowledge:read",
    description:
      "Knowledge tables (reference data agents search) with columns, point counts and attached pipeline_ids.",
    input: Schema.Struct(paging(25)),
    output: result({ knowledge_tables: objects, ...paged }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listKnowledgeTables()).pipe(
        Effect.map((tables) => paginate("knowledge_tables", tables, args))
      )
  }),
  tool({
    name: "search_knowledge_table",
    title: "Search a knowledge table",
    group: "discover",
    scope: "knowledge:read",
    description: "Searches a knowledge table in natural language, as agents do. Results carry point_ids.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      query: required(SearchKnowledge.fields.query, "What to look for, in natural language"),
      limit: withDefault(IntBetween(1, 20), 5, "Results to return"),
      use_hybrid: withDefault(Schema.Boolean, true, "true: vector and keyword matches fused; false: vector only")
    }),
    output: resultOf(SearchResults, { knowledge_table_id: integer }),
    run: ({ knowledge_table_id, ...search }) =>
      Effect.flatMap(McpBackend, (b) => b.searchKnowledge(knowledge_table_id, search)).pipe(
        Effect.map((r) => ({ knowledge_table_id, ...r }))
      )
  }),
  tool({
    name: "list_knowledge_points",
    title: "List knowledge points",
    group: "discover",
    scope: "knowledge:read",
    description: "A knowledge table's rows (points), a page at a time. All ids are strings.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      per_page: withDefault(IntBetween(1, 100), 20, "Points per page"),
      next_page_offset: optional(Schema.String, "next_page_offset of the previous page; omit for the first")
    }),
    output: result({ knowledge_table_id: string, points: objects, next_page_offset: nullable(string), ...paged }),
    run: ({ knowledge_table_id, next_page_offset, per_page }) =>
      Effect.flatMap(McpBackend, (b) => b.knowledgePoints(knowledge_table_id, per_page, next_page_offset)).pipe(
        Effect.map((page) => ({
          knowledge_table_id: String(knowledge_table_id),
          points: page.records.map((p) => ({
            point_id: String(p.point_id),
            default_id: String(p.default_id),
            data: p.data,
            modified_date: p.modified_date
          })),
          next_page_offset: page.next_page_offset,
          has_more: page.next_page_offset !== null,
          next_page: page.next_page_offset === null
            ? null
            : { knowledge_table_id, per_page, next_page_offset: page.next_page_offset }
        }))
      )
  }),
  tool({
    name: "create_knowledge_table",
    title: "Create a knowledge table",
    group: "build",
    scope: "knowledge:write",
    description:
      "Creates a knowledge table and its columns. Fill it with upsert_knowledge_points; agents reach it once attached with update_pipeline.",
    input: Schema.Struct(Struct.omit(CreateKnowledgeTable.fields, "workspace_id")),
    output: result({ knowledge_table: describe(object, "The table with its columns"), next_steps: nextSteps }),
    run: (input) =>
      Effect.flatMap(McpBackend, (b) => b.createKnowledgeTable(input)).pipe(
        Effect.map((table) => ({
          knowledge_table: table,
          next_steps: [
            `upsert_knowledge_points with knowledge_table_id ${table.id}: each point a default_id and a value per column (${
              table.columns.map((c) => c.name).join(", ")
            })`,
            `update_pipeline with attach_knowledge_table_ids [${table.id}] so the pipeline's agent searches it`
          ]
        }))
      )
  }),
  tool({
    name: "upsert_knowledge_points",
    title: "Upsert knowledge points",
    group: "build",
    scope: "knowledge:write",
    destructive: true,
    idempotent: true,
    description:
      "Creates or updates a knowledge table's rows, matched by default_id. Each point whose searchable text changed costs one training credit.",
    input: Schema.Struct({ knowledge_table_id: knowledgeTableId, ...UpsertPoints.fields }),
    output: result({ knowledge_table_id: integer, upserted: integer }),
    run: ({ knowledge_table_id, points }) =>
      Effect.flatMap(McpBackend, (b) => b.upsertPoints(knowledge_table_id, points)).pipe(
        Effect.map((r) => ({ knowledge_table_id, ...r }))
      )
  }),
  tool({
    name: "delete_knowledge_points",
    title: "Delete knowledge points",
    group: "update",
    scope: "knowledge:write",
    description: "Removes a knowledge table's rows by their default_id values.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      default_ids: required(DeletePoints.fields.ids, "default_id values of the points to remove")
    }),
    output: result({ knowledge_table_id: integer, deleted: integer }),
    run: ({ default_ids, knowledge_table_id }) =>
      Effect.flatMap(McpBackend, (b) => b.deletePoints(knowledge_table_id, default_ids)).pipe(
        Effect.map((r) => ({ knowledge_table_id, ...r }))
      )
  })
]
