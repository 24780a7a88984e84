/**
 * Workspace event webhooks (docs/handoff.md, "Events"): endpoints a workspace registers for its events,
 * signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64
 * HMAC-SHA256 of "<id>.<timestamp>.<body>" keyed with the base64 bytes after `whsec_`>`).
 */
import { Schema } from "effect"
import { createHmac } from "node:crypto"
import { CallbackUrl } from "./Channels.js"
import { Id, IdFromString, WorkspaceId } from "./Ids.js"
import { all, maxChars, Timestamp } from "./Schemas.js"

export const EventTypes = [
  "message.created",
  "conversation.handoff_requested",
  "conversation.taken",
  "conversation.returned",
  "message.status",
  "channel.disconnected"
] as const
export const EventType = Schema.Literal(...EventTypes).annotations({
  description:
    "`message.created` (every message: contact, agent, operator), `conversation.handoff_requested`, `conversation.taken` (taken or assigned), `conversation.returned` (to the agent: handed back, resolved or timed out), `message.status` (a provider's receipt moved a sent message's `delivery_status`), `channel.disconnected` (a provider revoked a channel's token)"
})
export type EventType = typeof EventType.Type

export const EventWebhookId = Id("EventWebhookId")
export type EventWebhookId = typeof EventWebhookId.Type
export const EventWebhookIdFromString = IdFromString(EventWebhookId)

export class EventWebhook extends Schema.Class<EventWebhook>("EventWebhook")({
  id: EventWebhookId,
  workspace_id: WorkspaceId,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  events: Schema.Array(EventType).annotations({ description: "Empty: every event type" }),
  is_active: Schema.Boolean,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class EventWebhookWithSecret extends EventWebhook.extend<EventWebhookWithSecret>("EventWebhookWithSecret")({
  secret: Schema.String.annotations({
    description: "`whsec_...`: verify signatures with it (Standard Webhooks libraries take it as is). Shown once"
  })
}) {}

const Events = Schema.Array(EventType).pipe(Schema.maxItems(EventTypes.length))
const Description = Schema.NullOr(Schema.String.pipe(maxChars(255)))

export const CreateEventWebhook = Schema.Struct({
  workspace_id: Schema.optional(WorkspaceId).annotations({ description: "Defaults to the caller's own workspace" }),
  url: CallbackUrl,
  description: Schema.optional(Description),
  events: Schema.optional(Events),
  is_active: Schema.optional(Schema.Boolean)
}).annotations({ ...all, identifier: "CreateEventWebhook" })
export type CreateEventWebhook = typeof CreateEventWebhook.Type

export const UpdateEventWebhook = Schema.Struct({
  url: Schema.optional(CallbackUrl),
  description: Schema.optional(Description),
  events: Schema.optional(Events),
  is_active: Schema.optional(Schema.Boolean)
}).annotations({ ...all, identifier: "UpdateEventWebhook" })
export type UpdateEventWebhook = typeof UpdateEventWebhook.Type

/** One event to one webhook, with its attempts. */
export class EventDelivery extends Schema.Class<EventDelivery>("EventDelivery")({
  id: Schema.Number,
  event_id: Schema.String.annotations({ description: "The `webhook-id` header: the same on every attempt" }),
  type: EventType,
  status: Schema.Literal("pending", "delivered", "failed"),
  attempts: Schema.Number,
  next_attempt_at: Schema.NullOr(Timestamp),
  last_status_code: Schema.NullOr(Schema.Number),
  last_error: Schema.NullOr(Schema.String),
  delivered_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}) {}

/** The `webhook-id` of workspace event `id`. */
export const eventMessageId = (id: number) => `evt_${id}`

/** Standard Webhooks' signature: the key is the base64 after `whsec_`. */
export const eventSignature = (secret: string, id: string, timestamp: string, body: string) =>
  `v1,${
    createHmac("sha256", Buffer.from(secret.replace(/^whsec_/, ""), "base64")).update(`${id}.${timestamp}.${body}`)
      .digest("base64")
  }`
