/**
 * Account analytics (REST twins of the MCP tools `get_account_summary`, `get_ai_performance` and
 * `get_messaging_stats`, SPEC.md 4.5) and handoff figures by pipeline (issue 19, REST only): counts over
 * every workspace the caller reaches, or one of them.
 */
import { Schema } from "effect"
import { ChannelKind } from "./Channels.js"
import { IdFromString, PipelineId, StageId, WorkspaceId } from "./Ids.js"
import { all } from "./Schemas.js"

/** `true`/`false` (also `1`/`0`) in a query string. */
const BooleanParam = Schema.transform(Schema.Literal("true", "false", "1", "0"), Schema.Boolean, {
  strict: true,
  decode: (v) => v === "true" || v === "1",
  encode: (b) => (b ? "true" : "false")
})

const dateOnly = /^(\d{4})-(\d{2})-(\d{2})$/
const dateTime =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|z|[+-]\d{2}(?::?\d{2})?| \d{2}(?::?\d{2})?)?$/

const validDay = (y: string, m: string, d: string) => {
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)))
  return date.getUTCFullYear() === Number(y) && date.getUTCMonth() === Number(m) - 1 && date.getUTCDate() === Number(d)
}

/** `Z`, `+02`, `+0200`, `+02:00` (and ` 02:00`, a `+` the query string decoded to a space) as `Z` or `+hh:mm`. */
const offsetOf = (zone: string | undefined) => {
  if (zone === undefined || zone.toUpperCase() === "Z") return "Z"
  const signed = zone.startsWith(" ") ? `+${zone.slice(1)}` : zone
  const digits = signed.slice(1).replace(":", "")
  return `${signed[0]}${digits.slice(0, 2)}:${digits.slice(2, 4) || "00"}`
}

/**
 * An ISO 8601 date (`2026-01-31`) or date-time (`2026-01-31T10:00:00Z`, `...+02:00`) as an instant.
 * A time without an offset is UTC; a `+` decoded to a space by the query string is read as `+`.
 */
export const parseIsoDate = (value: string): { readonly date: Date; readonly dateOnly: boolean } | undefined => {
  const day = dateOnly.exec(value)
  if (day !== null) {
    return validDay(day[1]!, day[2]!, day[3]!)
      ? { date: new Date(`${value}T00:00:00Z`), dateOnly: true }
      : undefined
  }
  const time = dateTime.exec(value)
  if (time === null || !validDay(time[1]!, time[2]!, time[3]!)) return undefined
  const [, , , , h, mi, s = "0", zone] = time
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined
  const base = value.slice(0, value.length - (zone?.length ?? 0)).replace(/[t ]/, "T")
  const parsed = Date.parse(base + offsetOf(zone))
  return Number.isNaN(parsed) ? undefined : { date: new Date(parsed), dateOnly: false }
}

export const IsoDate = Schema.String.pipe(
  Schema.filter((s) => parseIsoDate(s) !== undefined || "must be an ISO 8601 date (2026-01-31 or 2026-01-31T10:00:00Z)")
)

/**
 * Where the counts come from: every reachable workspace or one of them, test conversations left out unless asked for.
 */
const scopeFields = {
  workspace_id: Schema.optional(IdFromString(WorkspaceId)).annotations({
    description: "Count only this workspace (one you own or manage); all of them when omitted"
  }),
  include_test: Schema.optionalWith(BooleanParam, { default: () => false }).annotations({
    description: "Also count test opportunities and test conversations (`is_test`); default false"
  })
}

export const AnalyticsQuery = Schema.Struct(scopeFields).annotations(all)
export type AnalyticsQuery = typeof AnalyticsQuery.Type

/** SPEC.md 4.5 `get_messaging_stats` providers: the channel kind of the message's channel. */
export const MessagingProvider = ChannelKind
export type MessagingProvider = typeof MessagingProvider.Type

/** A period's end may not come before its start (the REST query and the MCP tool share it). */
export const endNotBeforeStart = (
  q: { readonly start_date?: string | undefined; readonly end_date?: string | undefined }
) => {
  if (q.start_date === undefined || q.end_date === undefined) return undefined
  const start = parseIsoDate(q.start_date)!.date
  const end = parseIsoDate(q.end_date)!.date
  return end < start ? { path: ["end_date"], message: "must be a date after or equal to start_date" } : undefined
}

export const MessagingStatsQuery = Schema.Struct({
  ...scopeFields,
  start_date: Schema.optional(IsoDate).annotations({ description: "On messages' created_at, inclusive" }),
  end_date: Schema.optional(IsoDate).annotations({
    description: "On messages' created_at, inclusive; a bare date includes that whole day (UTC)"
  }),
  pipeline_id: Schema.optional(IdFromString(PipelineId)),
  provider: Schema.optional(MessagingProvider)
}).pipe(Schema.filter((q) => endNotBeforeStart(q))).annotations(all)
export type MessagingStatsQuery = typeof MessagingStatsQuery.Type

const Count = Schema.Int.pipe(Schema.nonNegative())

export class OpportunityStatusCounts extends Schema.Class<OpportunityStatusCounts>("OpportunityStatusCounts")({
  pending: Count,
  active: Count,
  paused: Count,
  won: Count,
  lost: Count
}) {}

export class MessageRoleCounts extends Schema.Class<MessageRoleCounts>("MessageRoleCounts")({
  user: Count,
  assistant: Count
}) {}

export class AccountSummary extends Schema.Class<AccountSummary>("AccountSummary")({
  pipelines: Count,
  opportunities: Count,
  conversations: Count,
  messages: Count,
  opportunities_by_status: OpportunityStatusCounts,
  messages_by_role: MessageRoleCounts
}) {}

export class AiPerformance extends Schema.Class<AiPerformance>("AiPerformance")({
  ai_messages: Count.annotations({ description: "Assistant messages written by the AI (not by an operator)" }),
  manual_messages: Count.annotations({ description: "Assistant messages sent by an operator" }),
  responses: Count.annotations({
    description: "AI replies to a contact's message: what the average response time is taken over"
  }),
  average_response_seconds: Schema.NullOr(Schema.Number).annotations({
    description:
      "Mean seconds from a contact's message to the AI's reply (operator replies left out); null before the first AI reply"
  }),
  total_cost: Schema.Number.annotations({ description: "Sum of the messages' cost_for_user" })
}) {}

const messagingFields = {
  messages: Count,
  user_messages: Count,
  assistant_messages: Count,
  ai_messages: Count,
  manual_messages: Count,
  cost: Schema.Number
}

export class MessagingTotals extends Schema.Class<MessagingTotals>("MessagingTotals")(messagingFields) {}

export class MessagingDay extends Schema.Class<MessagingDay>("MessagingDay")({
  date: Schema.String.annotations({ description: "UTC day, YYYY-MM-DD" }),
  ...messagingFields
}) {}

export class MessagingStats extends Schema.Class<MessagingStats>("MessagingStats")({
  totals: MessagingTotals,
  series: Schema.Array(MessagingDay).annotations({
    description:
      "One entry per UTC day from the first to the last day with a message, days without any included as zeros"
  })
}) {}

/** The handoff figures' parameters; the time series takes the same ones. */
const handoffQueryFields = {
  ...scopeFields,
  start_date: Schema.optional(IsoDate).annotations({ description: "On the `request` events' created_at, inclusive" }),
  end_date: Schema.optional(IsoDate).annotations({
    description: "On the `request` events' created_at, inclusive; a bare date includes that whole day (UTC)"
  }),
  pipeline_id: Schema.optional(IdFromString(PipelineId)).annotations({
    description: "Only this pipeline's conversations (the newest opportunity's pipeline, else the channel's)"
  })
}

export const HandoffStatsQuery = Schema.Struct(handoffQueryFields).pipe(Schema.filter((q) => endNotBeforeStart(q)))
  .annotations(all)
export type HandoffStatsQuery = typeof HandoffStatsQuery.Type

/** Every figure is over the requests made in the period; what followed each one counts even after the period. */
const handoffFields = {
  requested: Count.annotations({
    description: "`request` events: a person asked for (by the contact, the agent, a rule or an operator)"
  }),
  taken: Count.annotations({
    description:
      "Requests an operator took (`take`) or was assigned (`assign`) before the agent had the conversation again"
  }),
  median_take_seconds: Schema.NullOr(Schema.Number).annotations({
    description:
      "Median seconds from a request to its first `take` or `assign` over the `taken` requests; null when none"
  }),
  handed_back: Count.annotations({
    description:
      "Requests whose wait or takeover ended with a `return` (an operator's) or a `timeout` that returned the conversation to the agent"
  }),
  resolved: Count.annotations({
    description: "Requests whose wait or takeover ended with `resolve` (a won or lost stage)"
  }),
  open: Count.annotations({ description: "Requests still waiting or with an operator" }),
  handed_back_share: Schema.NullOr(Schema.Number).annotations({
    description:
      "handed_back / (handed_back + resolved): of the requests that ended, the share the agent got back unresolved; null when none ended"
  })
}

export class HandoffTotals extends Schema.Class<HandoffTotals>("HandoffTotals")(handoffFields) {}

export class PipelineHandoffs extends Schema.Class<PipelineHandoffs>("PipelineHandoffs")({
  pipeline_id: Schema.NullOr(PipelineId).annotations({
    description: "null: conversations with neither an opportunity nor a channel pipeline"
  }),
  pipeline_name: Schema.NullOr(Schema.String),
  ...handoffFields
}) {}

export class HandoffStats extends Schema.Class<HandoffStats>("HandoffStats")({
  totals: HandoffTotals,
  pipelines: Schema.Array(PipelineHandoffs).annotations({
    description: "One entry per pipeline with a request in the period, by pipeline id"
  })
}) {}

/** At most this many UTC days in one series (a leap year). */
export const MAX_SERIES_DAYS = 366

export const TimeseriesQuery = Schema.Struct({
  ...handoffQueryFields,
  start_date: handoffQueryFields.start_date.annotations({
    description:
      "The first day (UTC) of the series, an inclusive bound on each figure's created_at; default 29 days before end_date"
  }),
  end_date: handoffQueryFields.end_date.annotations({
    description:
      `The last day (UTC) of the series, inclusive; a bare date includes that whole day; default today. At most ${MAX_SERIES_DAYS} days in all`
  }),
  pipeline_id: handoffQueryFields.pipeline_id.annotations({
    description: "Only this pipeline: messages' pipeline_id, handoffs' conversation pipeline, the stage's pipeline"
  })
}).pipe(Schema.filter((q) => endNotBeforeStart(q))).annotations(all)
export type TimeseriesQuery = typeof TimeseriesQuery.Type

const Median = Schema.NullOr(Schema.Number)

/** One won or lost stage's entries on a day of the time series. */
export class TimeseriesStageCount extends Schema.Class<TimeseriesStageCount>("TimeseriesStageCount")({
  stage_id: StageId.annotations({ description: "The won or lost stage entered" }),
  stage_name: Schema.String.annotations({ description: "The stage's name (today's)" }),
  nature: Schema.Literal("won", "lost").annotations({ description: "The stage's nature" }),
  count: Count.annotations({ description: "Opportunities that entered this stage that day (each opportunity once)" })
}) {}

export class TimeseriesDay extends Schema.Class<TimeseriesDay>("TimeseriesDay")({
  date: Schema.String.annotations({ description: "UTC day, YYYY-MM-DD" }),
  contact_messages: Count.annotations({ description: "Messages from the contact (role user)" }),
  ai_messages: Count.annotations({ description: "Assistant messages the AI wrote" }),
  operator_messages: Count.annotations({ description: "Assistant messages an operator sent (is_manual)" }),
  ai_cost: Schema.Number.annotations({ description: "Sum of the AI messages' cost_for_user" }),
  median_ai_response_seconds: Median.annotations({
    description:
      "Median seconds from a contact's message to the AI's reply that came right after it (the ai-performance rule), over that day's replies; null when none"
  }),
  handoffs_requested: Count.annotations({
    description: "`request` events that day (the handoffs endpoint's `requested`)"
  }),
  median_take_seconds: Median.annotations({
    description:
      "Median seconds to the first `take` or `assign` of that day's requests (the handoffs endpoint's rule); null when none was taken"
  }),
  won: Count.annotations({ description: "Opportunities that entered a won stage that day" }),
  lost: Count.annotations({ description: "Opportunities that entered a lost stage that day" }),
  closed_by_stage: Schema.Array(TimeseriesStageCount).annotations({
    description:
      "`won` and `lost` by the stage entered: one entry per won or lost stage that opportunities entered that day, by stage_id; empty on a day without any. An opportunity entering two such stages that day counts once in `won`/`lost` but in each stage's entry"
  })
}) {}

export class Timeseries extends Schema.Class<Timeseries>("Timeseries")({
  start_date: Schema.String.annotations({ description: "The series' first UTC day" }),
  end_date: Schema.String.annotations({ description: "The series' last UTC day" }),
  series: Schema.Array(TimeseriesDay).annotations({
    description:
      "One entry per UTC day from start_date to end_date, in order; days without data are zeros with null medians"
  })
}) {}
