import { Schema } from "effect"
import { ChannelId, PipelineId, WorkspaceId } from "./Ids.js"
import { isHttpUrl, isIpOrCidr, isOrigin } from "./Network.js"
import { all, maxChars, NonEmptyString, Timestamp } from "./Schemas.js"

export const ChannelKind = Schema.Literal("web", "widget", "whatsapp", "messenger", "instagram", "linkedin")
export type ChannelKind = typeof ChannelKind.Type

/** Kinds authenticated with a `wc_` client id (and, for web, a secret that signs reply webhooks). */
export const hasClientCredentials = (kind: ChannelKind) => kind === "web" || kind === "widget"

/** The kinds with an adapter (docs/channels.md): only these can be created or activated. */
export const ConnectableKinds: ReadonlyArray<ChannelKind> = ["web", "widget"]

/** The 422 message for a kind without an adapter; `linkedin` stays valid for statistics filters. */
export const notConnectable = (kind: ChannelKind) =>
  `The ${kind} channel kind cannot be connected yet; the kinds that work are ${ConnectableKinds.join(" and ")}.`

export const CallbackUrl = Schema.String.pipe(
  maxChars(2048),
  Schema.filter((s) => isHttpUrl(s) || "must be an http or https URL")
)
export const Origin = Schema.String.pipe(
  Schema.filter((s) => isOrigin(s) || "must be an origin such as https://shop.example.com")
)
export const IpOrCidr = Schema.String.pipe(
  Schema.filter((s) => isIpOrCidr(s) || "must be an IP address or a CIDR range such as 203.0.113.0/24")
)

export class Channel extends Schema.Class<Channel>("Channel")({
  id: ChannelId,
  workspace_id: WorkspaceId,
  kind: ChannelKind,
  name: Schema.String,
  pipeline_id: Schema.NullOr(PipelineId),
  is_active: Schema.Boolean,
  client_id: Schema.NullOr(Schema.String),
  callback_url: Schema.NullOr(Schema.String),
  allowed_origins: Schema.Array(Schema.String),
  allowed_ips: Schema.Array(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/** Returned once, by create and rotate: the only answers that carry the secret. */
export class ChannelWithSecret extends Channel.extend<ChannelWithSecret>("ChannelWithSecret")({
  client_secret: Schema.NullOr(Schema.String)
}) {}

/** What both create and update may set. */
const writableFields = {
  name: Schema.optional(NonEmptyString(255)),
  pipeline_id: Schema.optional(Schema.NullOr(PipelineId)),
  is_active: Schema.optional(Schema.Boolean),
  callback_url: Schema.optional(Schema.NullOr(CallbackUrl)),
  allowed_origins: Schema.optional(Schema.Array(Origin)),
  allowed_ips: Schema.optional(Schema.Array(IpOrCidr))
}

export const CreateChannel = Schema.Struct({
  workspace_id: Schema.optional(WorkspaceId),
  kind: ChannelKind,
  ...writableFields
}).annotations({ ...all, identifier: "CreateChannel" })
export type CreateChannel = typeof CreateChannel.Type

export const UpdateChannel = Schema.Struct(writableFields).annotations({ ...all, identifier: "UpdateChannel" })
export type UpdateChannel = typeof UpdateChannel.Type

/** One reply-webhook attempt, as the delivery log shows it. */
export class Delivery extends Schema.Class<Delivery>("Delivery")({
  id: Schema.Int,
  message_id: Schema.String,
  run: Schema.Int.annotations({ description: "0 for the delivery itself, n for the n-th replay" }),
  attempt: Schema.Int,
  url: Schema.String,
  status_code: Schema.NullOr(Schema.Int),
  duration_ms: Schema.Int,
  error: Schema.NullOr(Schema.String),
  response_excerpt: Schema.NullOr(Schema.String),
  created_at: Timestamp
}) {}

export const DeliveriesQuery = Schema.Struct({
  message_id: Schema.optional(Schema.String.pipe(maxChars(64))),
  limit: Schema.optionalWith(
    Schema.compose(
      Schema.NumberFromString,
      Schema.Int.pipe(Schema.between(1, 200, { message: () => "must be between 1 and 200" }))
    ),
    { default: () => 50 }
  )
}).annotations(all)

export class Replay extends Schema.Class<Replay>("Replay")({ message_id: Schema.String, run: Schema.Int }) {}
