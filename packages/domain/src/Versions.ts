/**
 * Pipeline versions (docs/versions.md): the configuration tables are a pipeline's draft; a version is an
 * immutable snapshot of them, published (or republished by a rollback) to become what conversations run
 * when the workspace has drafts on. A diff between two versions, or a version and the draft, is per section.
 */
import { ParseResult, Schema } from "effect"
import { ErrorResponse } from "./Envelope.js"
import { PipelineId, WorkspaceId } from "./Ids.js"
import { IntBetween, Timestamp } from "./Schemas.js"

export const VersionNumber = IntBetween(1, 1_000_000)

/** `draft` (the tables), `live` (the live version) or a version's number, as a query parameter or body field. */
export const VersionRef = Schema.Union(Schema.Literal("draft", "live"), VersionNumber)
export type VersionRef = typeof VersionRef.Type

/**
 * A version as text (a query parameter, an MCP argument): one of `words`, or a version's number. The
 * words are what the caller accepts (`draft` and `live` for a diff; an eval run takes `published` too).
 */
export const versionFromString = <const Words extends readonly [string, ...Array<string>]>(...words: Words) => {
  const message = `must be ${words.join(", ")} or a version number`
  return Schema.transformOrFail(Schema.String, Schema.Union(Schema.Literal(...words), VersionNumber), {
    strict: true,
    decode: (s, _, ast) =>
      words.includes(s)
        ? ParseResult.succeed(s as Words[number])
        : /^[1-9][0-9]{0,6}$/.test(s)
        ? ParseResult.succeed(Number(s))
        : ParseResult.fail(new ParseResult.Type(ast, s, message)),
    encode: (r) => ParseResult.succeed(String(r))
  }).annotations({ message: () => message })
}

export const VersionRefFromString = versionFromString("draft", "live")

export class WorkspaceSettings extends Schema.Class<WorkspaceSettings>("WorkspaceSettings")({
  workspace_id: WorkspaceId,
  drafts: Schema.Boolean.annotations({
    description:
      "on: edits change a published pipeline's draft until `publish`; off (default): every edit is live at once"
  })
}) {}

export const UpdateWorkspaceSettings = Schema.Struct({ drafts: Schema.optional(Schema.Boolean) })
export type UpdateWorkspaceSettings = typeof UpdateWorkspaceSettings.Type

const versionFields = {
  number: Schema.Int,
  pipeline_id: PipelineId,
  source: Schema.Literal("publish", "rollback"),
  rolled_back_from: Schema.NullOr(Schema.Int).annotations({ description: "the version a rollback republished" }),
  published_at: Timestamp,
  published_by: Schema.String.annotations({ description: "the token's name (a console session's is `console`)" }),
  published_by_user_id: Schema.NullOr(Schema.Int),
  is_live: Schema.Boolean
}

export class PipelineVersionSummary
  extends Schema.Class<PipelineVersionSummary>("PipelineVersionSummary")(versionFields)
{}

export class PipelineVersion extends Schema.Class<PipelineVersion>("PipelineVersion")({
  ...versionFields,
  config: Schema.Record({ key: Schema.String, value: Schema.Unknown })
    .annotations({
      description:
        "the snapshot: `pipeline`, `stages`, `variables`, `actions`, `followups`, `knowledge_tables`, as their rows"
    })
}) {}

export class PipelineVersions extends Schema.Class<PipelineVersions>("PipelineVersions")({
  pipeline_id: PipelineId,
  drafts: Schema.Boolean.annotations({ description: "the workspace setting: whether the live version is what runs" }),
  live_version: Schema.NullOr(Schema.Int).annotations({ description: "null until the first publish" }),
  is_publish_gated: Schema.Boolean,
  draft_changed: Schema.Boolean.annotations({
    description: "the draft differs from the live version (true before a first publish)"
  }),
  versions: Schema.Array(PipelineVersionSummary).annotations({ description: "newest first" })
}) {}

export const Rollback = Schema.Struct({
  version: VersionNumber.annotations({ description: "the version to republish" })
})
export type Rollback = typeof Rollback.Type

export const PublishGate = Schema.Struct({
  is_publish_gated: Schema.Boolean.annotations({
    description: "publish only when the newest finished eval run of the draft passed and the draft is unchanged since"
  })
})
export type PublishGate = typeof PublishGate.Type

export const DiffQuery = Schema.Struct({
  from: Schema.optional(VersionRefFromString).annotations({ description: "default `live`" }),
  to: Schema.optional(VersionRefFromString).annotations({ description: "default `draft`" })
})
export type DiffQuery = typeof DiffQuery.Type

export const FieldChange = Schema.Struct({ field: Schema.String, old: Schema.Unknown, new: Schema.Unknown })
export type FieldChange = typeof FieldChange.Type

export const RowRef = Schema.Struct({ id: Schema.Int, name: Schema.String })

export const SectionDiff = Schema.Struct({
  added: Schema.Array(RowRef),
  removed: Schema.Array(RowRef),
  changed: Schema.Array(Schema.Struct({ ...RowRef.fields, fields: Schema.Array(FieldChange) }))
})
export type SectionDiff = typeof SectionDiff.Type

export class VersionDiff extends Schema.Class<VersionDiff>("VersionDiff")({
  from: Schema.Union(Schema.Literal("draft"), Schema.Int),
  to: Schema.Union(Schema.Literal("draft"), Schema.Int),
  settings: Schema.Array(FieldChange),
  stages: SectionDiff,
  variables: SectionDiff,
  actions: SectionDiff,
  followups: SectionDiff,
  knowledge_tables: Schema.Struct({ attached: Schema.Array(Schema.Int), detached: Schema.Array(Schema.Int) }),
  text: Schema.String.annotations({ description: "the same, one line a change" })
}) {}

/** 409: the pipeline's publish is gated by evals and the draft has no passing run since its last change. */
export class PublishGated extends Schema.TaggedError<PublishGated>()("PublishGated", { message: Schema.String }) {}
export const PublishGatedResponse = ErrorResponse(PublishGated, 409, "PublishGated")
