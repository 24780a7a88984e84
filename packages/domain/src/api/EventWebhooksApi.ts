import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok } from "../Envelope.js"
import { UnprocessableResponse, WebhookNotFoundResponse } from "../Errors.js"
import {
  CreateEventWebhook,
  EventDelivery,
  EventWebhook,
  EventWebhookIdFromString,
  EventWebhookWithSecret,
  UpdateEventWebhook
} from "../EventWebhooks.js"
import { Authorized } from "./Auth.js"

const path = Schema.Struct({ id: EventWebhookIdFromString })

/** Workspace event webhooks: integration settings, so the channels scopes. */
export class EventWebhooksApi extends HttpApiGroup.make("eventWebhooks")
  .add(
    HttpApiEndpoint.get("list", "/api/user/webhooks")
      .addSuccess(Ok(Schema.Array(EventWebhook)))
      .middleware(Authorized["channels:read"])
      .annotate(OpenApi.Summary, "List the workspace event webhooks")
  )
  .add(
    HttpApiEndpoint.post("create", "/api/user/webhooks")
      .setPayload(CreateEventWebhook)
      .addSuccess(
        Ok(EventWebhookWithSecret, { message: "Webhook created. Store the secret now: it is not shown again." })
      )
      .addError(UnprocessableResponse)
      .middleware(Authorized["channels:write"])
      .annotate(OpenApi.Summary, "Register an endpoint for message and handoff events (Standard Webhooks signatures)")
  )
  .add(
    HttpApiEndpoint.get("get", "/api/user/webhooks/:id")
      .setPath(path)
      .addSuccess(Ok(EventWebhook))
      .addError(WebhookNotFoundResponse)
      .middleware(Authorized["channels:read"])
      .annotate(OpenApi.Summary, "One event webhook (never its secret)")
  )
  .add(
    HttpApiEndpoint.put("update", "/api/user/webhooks/:id")
      .setPath(path)
      .setPayload(UpdateEventWebhook)
      .addSuccess(Ok(EventWebhook, { message: "Webhook updated." }))
      .addError(WebhookNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["channels:write"])
      .annotate(OpenApi.Summary, "Change an event webhook's URL, events or state")
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/user/webhooks/:id")
      .setPath(path)
      .addSuccess(Ok(Schema.Struct({ id: Schema.Number, deleted: Schema.Boolean }), { message: "Webhook deleted." }))
      .addError(WebhookNotFoundResponse)
      .middleware(Authorized["channels:write"])
      .annotate(OpenApi.Summary, "Delete an event webhook and its delivery log")
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/api/user/webhooks/:id/deliveries")
      .setPath(path)
      .addSuccess(Ok(Schema.Array(EventDelivery)))
      .addError(WebhookNotFoundResponse)
      .middleware(Authorized["channels:read"])
      .annotate(OpenApi.Summary, "The webhook's latest 100 deliveries, newest first, with their status and attempts")
  )
  .annotate(OpenApi.Title, "Event webhooks")
{}
