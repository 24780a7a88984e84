/**
 * A knowledge table's sources (issue 41, docs/api.md "Knowledge sources"): web pages, sitemaps and crawls whose
 * chunks become the table's points, synced in the background. Files are left to REST and the CLI: a file's bytes
 * would have to travel inside the JSON of a tool call, and a model's context is no place for a 50 MB upload.
 * `knowledge:read` lists, `knowledge:write` adds and syncs, as on REST.
 */
import { CreateWebSource, type KnowledgeSource, KnowledgeSourceId, KnowledgeTableId, SourceSync } from "@parley/domain"
import { Effect, Schema } from "effect"
import { McpBackend } from "../Backend.js"
import { describe, integer, nextSteps, object, objects, paged, paginate, result } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, paging, required } from "../ToolFields.js"

const knowledgeTableId = required(KnowledgeTableId, "From list_knowledge_tables")
const source = describe(object, "The source: id, status, points, error")

/** A row of the list: what tells a source's state, without the timestamps a model does not act on. */
const row = (s: KnowledgeSource) => ({
  id: s.id,
  kind: s.kind,
  name: s.name,
  status: s.status,
  points: s.points,
  pages: s.pages,
  progress: s.progress,
  error: s.error,
  sync: s.sync,
  last_synced_at: s.last_synced_at
})

export const knowledgeSourceTools: ReadonlyArray<Tool> = [
  tool({
    name: "add_knowledge_source",
    title: "Add a knowledge source",
    group: "build",
    scope: "knowledge:write",
    openWorld: true,
    description:
      "Adds a web page, sitemap or site crawl to a document table; its chunks become points, synced in the background. Files: upload over REST or the CLI.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      kind: required(CreateWebSource.fields.kind, "url: one page; sitemap: its pages; crawl: same-host links"),
      url: required(CreateWebSource.fields.url, "The http(s) page, sitemap or start of the crawl"),
      max_pages: CreateWebSource.fields.max_pages,
      max_depth: CreateWebSource.fields.max_depth,
      include: CreateWebSource.fields.include,
      exclude: CreateWebSource.fields.exclude,
      sync: optional(SourceSync, "Re-sync daily or weekly (default off: on demand)")
    }),
    output: result({ knowledge_source: source, next_steps: nextSteps }),
    run: ({ knowledge_table_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.addKnowledgeSource(knowledge_table_id, input)).pipe(
        Effect.map((s) => ({
          knowledge_source: s,
          next_steps: [
            `list_knowledge_sources with knowledge_table_id ${knowledge_table_id} until source ${s.id} is ready`,
            `search_knowledge_table with knowledge_table_id ${knowledge_table_id} once it is`
          ]
        }))
      )
  }),
  tool({
    name: "list_knowledge_sources",
    title: "List knowledge sources",
    group: "discover",
    scope: "knowledge:read",
    description:
      "A table's sources with status (pending, processing, ready, failed), points, pages, progress and error.",
    input: Schema.Struct({ knowledge_table_id: knowledgeTableId, ...paging(25) }),
    output: result({ knowledge_table_id: integer, knowledge_sources: objects, ...paged }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listKnowledgeSources(args.knowledge_table_id)).pipe(
        Effect.map((sources) => ({
          knowledge_table_id: args.knowledge_table_id,
          ...paginate("knowledge_sources", sources.map(row), args)
        }))
      )
  }),
  tool({
    name: "sync_knowledge_source",
    title: "Sync a knowledge source",
    group: "update",
    scope: "knowledge:write",
    openWorld: true,
    description:
      "Syncs a source again now: changed chunks updated, vanished ones deleted, unchanged kept. A failed sync keeps the last good points.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      knowledge_source_id: required(KnowledgeSourceId, "From list_knowledge_sources")
    }),
    output: result({ knowledge_source: source }),
    run: ({ knowledge_source_id, knowledge_table_id }) =>
      Effect.flatMap(McpBackend, (b) => b.syncKnowledgeSource(knowledge_table_id, knowledge_source_id)).pipe(
        Effect.map((s) => ({ knowledge_source: s }))
      )
  })
]
