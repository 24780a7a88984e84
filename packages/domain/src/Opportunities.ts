import { ParseResult, Predicate, Schema, SchemaAST as AST } from "effect"
import { ChannelId, Id, IdFromString, PipelineId, StageId, WorkspaceId } from "./Ids.js"
import { isAllDigits, normalisePhone } from "./Phone.js"
import { StageNature } from "./Pipelines.js"
import { all, IntFromQuery, maxChars, PageNumber, PerPage, Text, Timestamp } from "./Schemas.js"

export const OpportunityId = Id("OpportunityId")
export type OpportunityId = typeof OpportunityId.Type
export const ContactId = Id("ContactId")
export type ContactId = typeof ContactId.Type
export const ConversationId = Id("ConversationId")
export type ConversationId = typeof ConversationId.Type
export const ConversationIdFromString = IdFromString(ConversationId)
export const TagId = Id("TagId")
export type TagId = typeof TagId.Type

export const OpportunityStatus = Schema.Literal("pending", "active", "paused", "won", "lost")
export type OpportunityStatus = typeof OpportunityStatus.Type
export const Priority = Schema.Literal("low", "medium", "high")
export type Priority = typeof Priority.Type
export const ConversationStatus = Schema.Literal("active", "paused")
export type ConversationStatus = typeof ConversationStatus.Type

export const Context = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** A `{{opportunity}}` or contact identifier in a path: an integer id, or a phone number. */
export const Identifier = Schema.String.pipe(Schema.minLength(1), maxChars(64))

export const Email = Schema.String.pipe(
  maxChars(255, { message: () => "may not be greater than 255 characters" }),
  Schema.filter((s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s) || "must be a valid email address")
)

/** Digits only with country code, no `+`; what clients send is normalised, what cannot be a phone is refused. */
export const Phone = Schema.transformOrFail(Schema.String, Schema.String, {
  strict: true,
  decode: (s, _, ast) => {
    const phone = normalisePhone(s)
    return phone === undefined
      ? ParseResult.fail(
        new ParseResult.Type(ast, s, "must be a valid phone number with country code (digits only, e.g. 4915123456789)")
      )
      : ParseResult.succeed(phone)
  },
  encode: (s) => ParseResult.succeed(s)
})

export class Tag extends Schema.Class<Tag>("Tag")({ id: TagId, name: Schema.String }) {}

export class ConversationSummary extends Schema.Class<ConversationSummary>("ConversationSummary")({
  id: ConversationId,
  is_test: Schema.Boolean,
  last_message_at: Schema.NullOr(Timestamp),
  messages_count: Schema.Int,
  cost_for_user: Schema.Number,
  status: ConversationStatus,
  last_message_content: Schema.NullOr(Schema.String),
  avg_response_time: Schema.Number.annotations({
    description: "Seconds from a contact's message to the next reply, averaged"
  }),
  channel_id: Schema.NullOr(ChannelId),
  notes: Schema.Array(Schema.String),
  pivot: Schema.Struct({ opportunity_id: OpportunityId, conversation_id: ConversationId })
}) {}

const baseFields = {
  id: OpportunityId,
  workspace_id: WorkspaceId,
  status: OpportunityStatus,
  contact_id: ContactId,
  stage_id: StageId,
  pipeline_id: PipelineId,
  name: Schema.NullOr(Schema.String),
  notes: Schema.NullOr(Schema.String),
  context: Schema.NullOr(Context),
  is_test: Schema.Boolean,
  source: Schema.NullOr(Schema.String),
  source_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}

/** SPEC.md 2.2: the full record returned by create, retrieve, update and list-by-contact. */
export class Opportunity extends Schema.Class<Opportunity>("Opportunity")({
  ...baseFields,
  contact_name: Schema.NullOr(Schema.String),
  contact_custom_name: Schema.NullOr(Schema.String),
  contact_priority: Priority,
  contact_identifier: Schema.NullOr(Schema.String),
  contact_email: Schema.NullOr(Schema.String),
  contact_custom_email: Schema.NullOr(Schema.String),
  contact_phone: Schema.NullOr(Schema.String),
  contact_custom_phone: Schema.NullOr(Schema.String),
  stage_name: Schema.String,
  stage_nature: StageNature,
  tags: Schema.Array(Tag),
  conversations: Schema.Array(ConversationSummary)
}) {}

/** SPEC.md 2.2: created on an existing contact via `contact_id`: base fields and the joined conversation. */
export class OpportunityOnContact extends Schema.Class<OpportunityOnContact>("OpportunityOnContact")({
  ...baseFields,
  conversation: Schema.Struct({ id: ConversationId, contact_id: ContactId, status: ConversationStatus })
}) {}

const NullableName = Schema.NullOr(Text(255))

export const ContactInput = Schema.Struct({
  name: Schema.optional(NullableName),
  email: Schema.optional(Schema.NullOr(Email)),
  phone: Schema.optional(Schema.NullOr(Phone)),
  priority: Schema.optional(Priority)
})

const CreateOpportunityFields = Schema.Struct({
  pipeline_id: PipelineId,
  stage_id: Schema.optional(StageId),
  contact_id: Schema.optional(ContactId),
  name: Schema.optional(NullableName),
  notes: Schema.optional(Schema.NullOr(Text(65_535))),
  status: Schema.optional(Schema.Literal("pending", "active", "won", "lost")),
  context: Schema.optional(Schema.NullOr(Context)),
  tags: Schema.optional(Schema.Array(Schema.Trim.pipe(Schema.minLength(1), maxChars(100)))),
  is_test: Schema.optional(Schema.Boolean),
  contact: Schema.optional(ContactInput)
}).pipe(
  // SPEC.md 4.1: contact.email is required without contact.phone and contact_id, and the other way round
  Schema.filter((p) =>
    p.contact_id === undefined && !p.contact?.email && !p.contact?.phone
      ? [
        { path: ["contact", "email"], message: "is required when neither contact.phone nor contact_id is present" },
        { path: ["contact", "phone"], message: "is required when neither contact.email nor contact_id is present" }
      ]
      : undefined
  )
).annotations(all)

/** SPEC.md 4.1: with `contact_id`, `contact.*` is ignored and not required, so whatever it holds is dropped unread. */
const withoutIgnoredContact = (input: unknown): unknown => {
  if (!Predicate.isRecord(input) || input.contact_id === undefined || !("contact" in input)) return input
  const { contact: _ignored, ...rest } = input
  return rest
}

export const CreateOpportunity = Schema.transformOrFail(
  // documented as the fields above (the surrogate is what JSON Schema generation reads)
  Schema.Unknown.annotations({ [AST.SurrogateAnnotationId]: CreateOpportunityFields.ast }),
  Schema.typeSchema(CreateOpportunityFields),
  {
    strict: true,
    decode: (input, options) =>
      ParseResult.decodeUnknown(CreateOpportunityFields)(withoutIgnoredContact(input), options),
    encode: (payload, options) => ParseResult.encode(CreateOpportunityFields)(payload, options)
  }
).annotations({ ...all, identifier: "CreateOpportunity" })
export type CreateOpportunity = typeof CreateOpportunity.Type

export const UpdateOpportunity = Schema.Struct({
  stage_id: Schema.optional(StageId).annotations({ description: "Move to this stage of the same pipeline" }),
  name: Schema.optional(NullableName),
  notes: Schema.optional(Schema.NullOr(Text(65_535))).annotations({
    description: "Free-form notes; replace the old ones"
  }),
  status: Schema.optional(Schema.Literal("active", "won", "lost")).annotations({ description: "The new status" }),
  context: Schema.optional(Schema.NullOr(Context)),
  tags: Schema.optional(Schema.Array(Schema.Trim.pipe(Schema.minLength(1), maxChars(100)))),
  deleted_tags: Schema.optional(Schema.Array(TagId)),
  contact: Schema.optional(ContactInput)
}).annotations({ ...all, identifier: "UpdateOpportunity" })
export type UpdateOpportunity = typeof UpdateOpportunity.Type

export const LookupQuery = Schema.Struct({
  pipeline_id: Schema.optional(Schema.compose(IntFromQuery, PipelineId))
}).annotations(all)

export const UpdateConversation = Schema.Struct({
  status: Schema.optional(ConversationStatus),
  notes: Schema.optional(Schema.NullOr(Schema.Array(Schema.String.pipe(maxChars(10_000)))))
}).annotations({ ...all, identifier: "UpdateConversation" })
export type UpdateConversation = typeof UpdateConversation.Type

export class ConversationState extends Schema.Class<ConversationState>("ConversationState")({
  id: ConversationId,
  status: ConversationStatus
}) {}

export class Contact extends Schema.Class<Contact>("Contact")({
  id: ContactId,
  workspace_id: WorkspaceId,
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  identifier: Schema.NullOr(Schema.String),
  priority: Priority,
  custom_name: Schema.NullOr(Schema.String),
  custom_email: Schema.NullOr(Schema.String),
  custom_phone: Schema.NullOr(Schema.String),
  opportunities_count: Schema.Int,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/** A query value that may repeat (`tag_ids=1&tag_ids=2`, `tag_ids[]=1`) or be comma-separated. */
const Many = Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String)))
/**
 * `tag_ids` is integer[] (SPEC.md 4.5): a value that is no id is refused rather than dropped, which would lift the
 * filter.
 */
const ManyIds = Schema.optional(
  Schema.Union(Schema.String, Schema.Array(Schema.String)).pipe(
    Schema.filter((v) =>
      (typeof v === "string" ? [v] : v).flatMap((s) => s.split(",")).map((s) => s.trim()).filter((s) => s.length > 0)
        .every((s) => /^[1-9]\d{0,14}$/.test(s)) || "must be a list of integer ids"
    )
  )
)
const DateParam = Schema.String.pipe(Schema.filter((s) => !Number.isNaN(Date.parse(s)) || "must be an ISO 8601 date"))

const listFields = {
  pipeline_id: Schema.optional(Schema.compose(IntFromQuery, PipelineId)),
  status: Schema.optional(Schema.Literal("active", "pending", "won", "lost")),
  priority: Schema.optional(Priority),
  q: Schema.optional(Schema.String.pipe(maxChars(255))),
  tag_ids: ManyIds,
  "tag_ids[]": ManyIds,
  start_date: Schema.optional(DateParam),
  end_date: Schema.optional(DateParam),
  page: Schema.optionalWith(PageNumber, { default: () => 1 }),
  per_page: Schema.optionalWith(PerPage, { default: () => 25 })
}

export const ListOpportunitiesQuery = Schema.Struct({
  ...listFields,
  stage_id: Schema.optional(Schema.compose(IntFromQuery, StageId)),
  tags: Many,
  "tags[]": Many
}).annotations(all)
export type ListOpportunitiesQuery = typeof ListOpportunitiesQuery.Type

export const ListContactsQuery = Schema.Struct(listFields).annotations(all)
export type ListContactsQuery = typeof ListContactsQuery.Type

/** Values of a repeatable query parameter, flattened and split on commas. */
export const manyValues = (...values: ReadonlyArray<string | ReadonlyArray<string> | undefined>): Array<string> =>
  values.flatMap((v) => (v === undefined ? [] : typeof v === "string" ? [v] : v))
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v.length > 0)

export { isAllDigits, normalisePhone }
