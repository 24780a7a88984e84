/**
 * Evals (docs/evals.md): scripted conversations a pipeline is tested on before its changes meet
 * customers. A case is the contact's messages (with optional waits), where the opportunity starts
 * (stage, context) and what must come out: the replies' words, the stage reached, the status, the
 * actions fired and their payload fields, a handoff asked for or not, a cost and a number of AI
 * messages at most, and criteria a model judges. A run plays every case on the pipeline's live
 * configuration in sandboxed test conversations and keeps each case's transcript and verdicts.
 */
import { Schema } from "effect"
import { Id, IdFromString, PipelineId, StageId } from "./Ids.js"
import { ConversationId, OpportunityId } from "./Opportunities.js"
import { FiniteNumber, IntAtLeast, IntBetween, NonEmptyString, Text, Timestamp } from "./Schemas.js"
import { versionFromString } from "./Versions.js"

export const EvalCaseId = Id("EvalCaseId")
export type EvalCaseId = typeof EvalCaseId.Type
export const EvalCaseIdFromString = IdFromString(EvalCaseId)
export const EvalRunId = Id("EvalRunId")
export type EvalRunId = typeof EvalRunId.Type
export const EvalRunIdFromString = IdFromString(EvalRunId)

/** One phrase or several: `reply_contains: refund` or `reply_contains: [refund, order number]`. */
export const Phrases = Schema.Union(NonEmptyString(1000), Schema.Array(NonEmptyString(1000)).pipe(Schema.maxItems(20)))
export type Phrases = typeof Phrases.Type

/** Checks on replies: of one contact message (its `expect`), or of every reply of the case. */
const replyChecks = {
  reply_contains: Schema.optional(Phrases).annotations({ description: "phrases each in a reply, any case" }),
  reply_not_contains: Schema.optional(Phrases).annotations({ description: "phrases in no reply, any case" }),
  reply_matches: Schema.optional(Phrases).annotations({
    description: "JavaScript regular expressions each matching a reply, any case"
  })
}

export const ReplyExpectations = Schema.Struct(replyChecks)
export type ReplyExpectations = typeof ReplyExpectations.Type

/** An action that must have fired, by name; `payload` fields must be in its rendered JSON body with these values. */
export const ExpectedAction = Schema.Struct({
  name: NonEmptyString(255),
  payload: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
export type ExpectedAction = typeof ExpectedAction.Type

export const EvalExpectations = Schema.Struct({
  ...replyChecks,
  stage: Schema.optional(Schema.Union(StageId, NonEmptyString(255))).annotations({
    description: "the stage reached, by id or name"
  }),
  status: Schema.optional(Schema.Literal("pending", "active", "paused", "won", "lost")).annotations({
    description: "the opportunity's status at the end"
  }),
  actions: Schema.optional(Schema.Array(Schema.Union(NonEmptyString(255), ExpectedAction))).annotations({
    description: "actions that fired: names, or {name, payload} with payload fields to match"
  }),
  actions_not_fired: Schema.optional(Schema.Array(NonEmptyString(255))).annotations({
    description: "actions that must not fire, by name"
  }),
  handoff: Schema.optional(Schema.Boolean).annotations({
    description: "true: a person was asked for; false: none was"
  }),
  max_cost: Schema.optional(FiniteNumber.pipe(Schema.nonNegative({ message: () => "must not be negative" })))
    .annotations({
      description: "most the case's model calls may cost"
    }),
  max_ai_messages: Schema.optional(IntAtLeast(0)).annotations({ description: "most messages the agent may send" }),
  judge: Schema.optional(Phrases).annotations({
    description: "criteria a model judges the transcript on, e.g. \"asked for the order number\""
  })
})
export type EvalExpectations = typeof EvalExpectations.Type

export const EvalMessage = Schema.Struct({
  text: NonEmptyString(10_000),
  wait_ms: Schema.optional(IntBetween(0, 600_000)).annotations({
    description: "pause before sending it, after the last reply"
  }),
  expect: Schema.optional(ReplyExpectations).annotations({
    description: "reply_contains, reply_not_contains, reply_matches for the replies to it"
  })
})
export type EvalMessage = typeof EvalMessage.Type

/** The case as written in a file or sent over REST/MCP. */
export const EvalCaseSpec = Schema.Struct({
  name: Schema.propertySignature(NonEmptyString(255)).annotations({
    description: "unique among the pipeline's cases and in a run"
  }),
  description: Schema.optional(Text(2000)).annotations({ description: "what the case checks, for people" }),
  stage: Schema.optional(Schema.Union(StageId, NonEmptyString(255))).annotations({
    description: "starting stage, id or name (default: the first)"
  }),
  context: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
    description: "the opportunity's context"
  }),
  contact: Schema.optional(Schema.Struct({
    name: Schema.optional(NonEmptyString(255)).annotations({ description: "the contact's name the agent sees" })
  })).annotations({ description: "the sandboxed contact" }),
  messages: Schema.Array(Schema.Union(NonEmptyString(10_000), EvalMessage)).pipe(
    Schema.minItems(1, { message: () => "must contain at least 1 message" }),
    Schema.maxItems(50, { message: () => "may not contain more than 50 messages" })
  ).annotations({ description: "the contact's messages in order: texts, or {text, wait_ms, expect}" }),
  expect: Schema.optional(EvalExpectations).annotations({ description: "what must come out of the whole case" })
})
export type EvalCaseSpec = typeof EvalCaseSpec.Type

/** A message of a case as the runner sends it. */
export const caseMessages = (spec: EvalCaseSpec): ReadonlyArray<EvalMessage> =>
  spec.messages.map((m) => (typeof m === "string" ? { text: m } : m))

export const phrases = (
  p: Phrases | undefined
): ReadonlyArray<string> => (p === undefined ? [] : typeof p === "string" ? [p] : p)

export class EvalCase extends Schema.Class<EvalCase>("EvalCase")({
  id: EvalCaseId,
  pipeline_id: PipelineId,
  name: Schema.String,
  definition: EvalCaseSpec,
  source: Schema.Literal("api", "conversation"),
  source_conversation_id: Schema.NullOr(ConversationId),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/**
 * `version`: what the run plays (docs/versions.md): `live` (or `published`) what conversations run, `draft`
 * the configuration as edited, or a version's number. With drafts off, draft and live are the same.
 */
export const EvalVersion = Schema.Literal("live", "published", "draft")

/** What a run plays, as text (MCP): live, published, draft or a version number. */
export const EvalVersionFromString = versionFromString(...EvalVersion.literals)

export const StartEvalRun = Schema.Struct({
  version: Schema.optional(Schema.Union(EvalVersion, IntBetween(1, 1_000_000)))
    .annotations({ description: "live (default), published (the same), draft, or a version number" }),
  cases: Schema.optional(
    Schema.Array(EvalCaseSpec).pipe(Schema.maxItems(200, { message: () => "may not contain more than 200 cases" }))
  )
    .annotations({
      description: "cases to run, given here (from a file); with neither this nor case_ids: every stored case"
    }),
  case_ids: Schema.optional(Schema.Array(EvalCaseId).pipe(Schema.maxItems(200))).annotations({
    description: "stored cases to run"
  }),
  concurrency: Schema.optional(IntBetween(1, 8)).annotations({ description: "cases played at once (default 4)" })
})
export type StartEvalRun = typeof StartEvalRun.Type

export const SaveConversationAsCase = Schema.Struct({
  name: Schema.optional(NonEmptyString(255)).annotations({ description: "default: `Conversation <id>`" })
})
export type SaveConversationAsCase = typeof SaveConversationAsCase.Type

export class EvalVerdict extends Schema.Class<EvalVerdict>("EvalVerdict")({
  expectation: Schema.String,
  expected: Schema.Unknown,
  passed: Schema.Boolean,
  detail: Schema.String,
  /** the contact message (1 = the first) whose replies were checked; null for the whole case */
  message: Schema.NullOr(Schema.Int)
}) {}

export const EvalTranscriptEntry = Schema.Struct({
  role: Schema.Literal("contact", "agent", "operator"),
  text: Schema.NullOr(Schema.String),
  call_type: Schema.NullOr(Schema.String),
  status: Schema.String,
  no_reply_reason: Schema.NullOr(Schema.String),
  cost: Schema.Number,
  created_at: Timestamp
})
export type EvalTranscriptEntry = typeof EvalTranscriptEntry.Type

export const EvalRecordedAction = Schema.Struct({
  name: Schema.String,
  trigger: Schema.String,
  status: Schema.String,
  method: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  payload: Schema.Unknown,
  reason: Schema.NullOr(Schema.String)
})
export type EvalRecordedAction = typeof EvalRecordedAction.Type

/** What a case's conversation came to: read once the engine has nothing left to do for it. */
export const EvalOutcome = Schema.Struct({
  stage_id: StageId,
  stage_name: Schema.String,
  status: Schema.String,
  handoff_requested: Schema.Boolean,
  ai_messages: Schema.Int,
  cost: Schema.Number,
  transcript: Schema.Array(EvalTranscriptEntry),
  actions: Schema.Array(EvalRecordedAction)
})
export type EvalOutcome = typeof EvalOutcome.Type

export const EvalResultStatus = Schema.Literal("pending", "running", "passed", "failed", "error")

export class EvalResult extends Schema.Class<EvalResult>("EvalResult")({
  position: Schema.Int,
  name: Schema.String,
  case_id: Schema.NullOr(EvalCaseId),
  status: EvalResultStatus,
  conversation_id: Schema.NullOr(ConversationId),
  opportunity_id: Schema.NullOr(OpportunityId),
  cost: Schema.Number.annotations({ description: "the model's cost: replies and judged criteria" }),
  error: Schema.NullOr(Schema.String),
  verdicts: Schema.Array(EvalVerdict),
  outcome: Schema.NullOr(EvalOutcome),
  definition: EvalCaseSpec,
  started_at: Schema.NullOr(Timestamp),
  finished_at: Schema.NullOr(Timestamp)
}) {}

export class EvalComparison extends Schema.Class<EvalComparison>("EvalComparison")({
  previous_run_id: EvalRunId,
  previous_passed: Schema.Int,
  previous_failed: Schema.Int,
  previous_cost: Schema.Number,
  newly_failing: Schema.Array(Schema.String),
  newly_passing: Schema.Array(Schema.String)
}) {}

const runFields = {
  id: EvalRunId,
  pipeline_id: PipelineId,
  version: Schema.Union(Schema.Literal("live", "draft"), Schema.Int).annotations({ description: "what was asked for" }),
  version_number: Schema.NullOr(Schema.Int).annotations({
    description: "the version played; null: the draft (the configuration tables)"
  }),
  status: Schema.Literal("running", "passed", "failed", "interrupted"),
  concurrency: Schema.Int,
  cases: Schema.Int,
  passed: Schema.Int,
  failed: Schema.Int.annotations({ description: "failed expectations and cases that could not be played" }),
  cost: Schema.Number,
  comparison: Schema.NullOr(EvalComparison).annotations({
    description: "against the newest finished run of what is live"
  }),
  created_at: Timestamp,
  finished_at: Schema.NullOr(Timestamp)
}

export class EvalRunSummary extends Schema.Class<EvalRunSummary>("EvalRunSummary")(runFields) {}

export class EvalRun extends Schema.Class<EvalRun>("EvalRun")({ ...runFields, results: Schema.Array(EvalResult) }) {}
