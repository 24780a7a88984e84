import { Schema } from "effect"
import { ChannelId, PipelineId, WorkspaceId } from "./Ids.js"
import { isHttpUrl, isIpOrCidr, isOrigin } from "./Network.js"
import { all, IntBetween, maxChars, NonEmptyString, Timestamp } from "./Schemas.js"

export const ChannelKind = Schema.Literal(
  "web",
  "widget",
  "whatsapp",
  "messenger",
  "instagram",
  "linkedin",
  "telegram",
  "email",
  "sms"
)
export type ChannelKind = typeof ChannelKind.Type

/** Kinds authenticated with a `wc_` client id (and, for web, a secret that signs reply webhooks). */
export const hasClientCredentials = (kind: ChannelKind) => kind === "web" || kind === "widget"

/** The kinds with an adapter (docs/channels.md): only these can be created or activated. */
export const ConnectableKinds: ReadonlyArray<ChannelKind> = [
  "web",
  "widget",
  "whatsapp",
  "messenger",
  "instagram",
  "telegram",
  "sms",
  "email"
]

/** Kinds whose messages go through a provider's adapter (credentials, a webhook URL, receipts). */
export const isProviderKind = (kind: ChannelKind) => !hasClientCredentials(kind)

/** The 422 message for a kind without an adapter; `linkedin` stays valid for statistics filters. */
export const notConnectable = (kind: ChannelKind) =>
  `The ${kind} channel kind cannot be connected yet; the kinds that work are ${ConnectableKinds.join(", ")}.`

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
  /** A provider channel's webhook (docs/channels.md): paste it into the provider's dashboard; null for web and widget. */
  webhook_url: Schema.NullOr(Schema.String),
  /**
   * A simulated provider channel's phone (docs/channels.md, "Try it without an account"): a page that plays the
   * contact, sending correctly signed webhooks and showing what Parley sent back. Null for real channels.
   */
  simulator_url: Schema.NullOr(Schema.String),
  /** `disconnected` once the provider revoked its token: sends stop until the credentials are replaced. */
  status: Schema.Literal("connected", "disconnected"),
  status_reason: Schema.NullOr(Schema.String),
  /** Messages a second this channel's sending account may send (null: the provider's default). */
  rate_per_second: Schema.NullOr(Schema.Int),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/** Returned once, by create and rotate: the only answers that carry the secret. */
export class ChannelWithSecret extends Channel.extend<ChannelWithSecret>("ChannelWithSecret")({
  client_secret: Schema.NullOr(Schema.String),
  /** A provider channel's webhook verify token (generated unless given), to paste next to `webhook_url`. */
  verify_token: Schema.optional(Schema.NullOr(Schema.String))
}) {}

/** What both create and update may set. */
const writableFields = {
  name: Schema.optional(NonEmptyString(255)),
  pipeline_id: Schema.optional(Schema.NullOr(PipelineId)),
  is_active: Schema.optional(Schema.Boolean),
  callback_url: Schema.optional(Schema.NullOr(CallbackUrl)),
  allowed_origins: Schema.optional(Schema.Array(Origin)),
  allowed_ips: Schema.optional(Schema.Array(IpOrCidr)),
  /** A provider channel's credentials (docs/channels.md); stored encrypted, never returned; update replaces them. */
  credentials: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  rate_per_second: Schema.optional(Schema.NullOr(IntBetween(1, 1000)))
}

export const CreateChannel = Schema.Struct({
  workspace_id: Schema.optional(WorkspaceId),
  kind: ChannelKind,
  ...writableFields
}).annotations({ ...all, identifier: "CreateChannel" })
export type CreateChannel = typeof CreateChannel.Type

export const UpdateChannel = Schema.Struct(writableFields).annotations({ ...all, identifier: "UpdateChannel" })
export type UpdateChannel = typeof UpdateChannel.Type

/** `POST /api/user/channels/{channel}/check`: whether the provider accepts the credentials, in plain words. */
export class ChannelCheck extends Schema.Class<ChannelCheck>("ChannelCheck")({
  ok: Schema.Boolean,
  message: Schema.String,
  /** What the provider says about the account (for WhatsApp: display_phone_number, verified_name, quality_rating). */
  account: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}) {}

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
