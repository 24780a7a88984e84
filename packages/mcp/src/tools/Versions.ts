/**
 * Pipeline versions (docs/versions.md): publish the draft or republish an earlier version (a rollback),
 * list versions, and diff two of them or one and the draft. As REST's `/pipelines/{id}/versions` endpoints.
 */
import { PipelineVersions, VersionDiff, VersionNumber, VersionRefFromString } from "@parley/domain"
import { Effect, Schema } from "effect"
import { McpBackend } from "../Backend.js"
import { boolean, integer, nullable, result, resultOf, string } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, pipelineId } from "../ToolFields.js"

export const versionTools: ReadonlyArray<Tool> = [
  tool({
    name: "publish_pipeline",
    title: "Publish a pipeline",
    group: "update",
    scope: "pipelines:write",
    idempotent: false,
    description: "Makes the draft the live version; with version, republishes that one instead (rollback).",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      version: optional(VersionNumber, "Earlier version to roll back to")
    }),
    output: result({
      number: integer,
      source: string,
      rolled_back_from: nullable(integer),
      published_at: string,
      is_live: boolean
    }),
    run: ({ pipeline_id, version }) =>
      Effect.flatMap(
        McpBackend,
        (b) => (version === undefined ? b.publishPipeline(pipeline_id) : b.rollbackPipeline(pipeline_id, { version }))
      ).pipe(
        Effect.map(({ config: _, ...v }) => v)
      )
  }),
  tool({
    name: "list_pipeline_versions",
    title: "List pipeline versions",
    group: "discover",
    scope: "pipelines:read",
    description: "A pipeline's versions (newest first), which is live, and whether the draft changed since.",
    input: Schema.Struct({ pipeline_id: pipelineId }),
    output: resultOf(PipelineVersions),
    run: ({ pipeline_id }) =>
      Effect.map(Effect.flatMap(McpBackend, (b) => b.listPipelineVersions(pipeline_id)), (v) => ({ ...v }))
  }),
  tool({
    name: "diff_pipeline_versions",
    title: "Diff pipeline versions",
    group: "discover",
    scope: "pipelines:read",
    description: "What changed from one version to another; default live to draft.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      from: optional(VersionRefFromString, "draft, live (default) or a version number, as text"),
      to: optional(VersionRefFromString, "draft (default), live or a version number, as text")
    }),
    output: resultOf(VersionDiff),
    run: ({ pipeline_id, ...query }) =>
      Effect.map(Effect.flatMap(McpBackend, (b) => b.diffPipelineVersions(pipeline_id, query)), (d) => ({ ...d }))
  })
]
