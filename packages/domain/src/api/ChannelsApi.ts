import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ChannelLink, CreateChannelLink } from "../ChannelLinks.js"
import {
  Channel,
  ChannelCheck,
  ChannelWithSecret,
  CreateChannel,
  DeliveriesQuery,
  Delivery,
  Replay,
  UpdateChannel
} from "../Channels.js"
import { Ok } from "../Envelope.js"
import {
  ChannelNotFoundResponse,
  MessageNotFoundResponse,
  ProviderFailedResponse,
  UnprocessableResponse
} from "../Errors.js"
import { ChannelIdFromString } from "../Ids.js"
import { maxChars } from "../Schemas.js"
import { ChannelTemplate } from "../Templates.js"
import { Authorized } from "./Auth.js"

const channelPath = Schema.Struct({ channel: ChannelIdFromString })

export class ChannelsApi extends HttpApiGroup.make("channels")
  .add(
    HttpApiEndpoint.get("list", "/api/user/channels")
      .addSuccess(Ok(Schema.Array(Channel)))
      .middleware(Authorized["channels:read"])
      .annotate(OpenApi.Summary, "List channels")
  )
  .add(
    HttpApiEndpoint.post("create", "/api/user/channels")
      .setPayload(CreateChannel)
      .addSuccess(
        Ok(ChannelWithSecret, {
          message: "Channel created successfully. Store the client secret now: it is not shown again."
        })
      )
      .addError(UnprocessableResponse)
      .middleware(Authorized["channels:write"])
      .annotate(
        OpenApi.Summary,
        "Create a channel; web channels get a `wc_` client id and a secret, provider channels a webhook URL and verify token"
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/api/user/channels/:channel")
      .setPath(channelPath)
      .addSuccess(Ok(Channel))
      .addError(ChannelNotFoundResponse)
      .middleware(Authorized["channels:read"])
      .annotate(OpenApi.Summary, "Retrieve a channel (never its secret)")
  )
  .add(
    HttpApiEndpoint.put("update", "/api/user/channels/:channel")
      .setPath(channelPath)
      .setPayload(UpdateChannel)
      .addSuccess(Ok(Channel, { message: "Channel updated successfully." }))
      .addError(ChannelNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["channels:write"])
      .annotate(OpenApi.Summary, "Update callback URL, allowlists, active flag or linked pipeline")
  )
  .add(
    HttpApiEndpoint.post("rotate", "/api/user/channels/:channel/rotate")
      .setPath(channelPath)
      .addSuccess(
        Ok(ChannelWithSecret, {
          message: "Credentials rotated. Store the new client secret now: it is not shown again."
        })
      )
      .addError(ChannelNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["channels:write"])
      .annotate(OpenApi.Summary, "Regenerate the client id and secret (the old ones stop working at once)")
  )
  .add(
    HttpApiEndpoint.post("check", "/api/user/channels/:channel/check")
      .setPath(channelPath)
      .addSuccess(Ok(ChannelCheck))
      .addError(ChannelNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["channels:write"])
      .annotate(
        OpenApi.Summary,
        "Ask a provider channel's provider whether its credentials work (`ok`), and say plainly what is wrong"
      )
  )
  .add(
    HttpApiEndpoint.post("link", "/api/user/channels/:channel/links")
      .setPath(channelPath)
      .setPayload(CreateChannelLink)
      .addSuccess(Ok(ChannelLink, { message: "Link created." }))
      .addError(ChannelNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(ProviderFailedResponse)
      .middleware(Authorized["channels:write"])
      .annotate(
        OpenApi.Summary,
        "A link that starts a chat with the channel tied to a known contact (Telegram: t.me/{bot}?start=...), valid 30 days"
      )
  )
  .add(
    HttpApiEndpoint.get("templates", "/api/user/channels/:channel/templates")
      .setPath(channelPath)
      .addSuccess(Ok(Schema.Array(ChannelTemplate)))
      .addError(ChannelNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(ProviderFailedResponse)
      .middleware(Authorized["channels:read"])
      .annotate(
        OpenApi.Summary,
        "The message templates of a WhatsApp channel's business account (cached five minutes): only APPROVED ones can be sent"
      )
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/api/user/channels/:channel/deliveries")
      .setPath(channelPath)
      .setUrlParams(DeliveriesQuery)
      .addSuccess(Ok(Schema.Array(Delivery)))
      .addError(ChannelNotFoundResponse)
      .middleware(Authorized["channels:read"])
      .annotate(
        OpenApi.Summary,
        "The reply-webhook delivery log, newest first: every attempt with status, duration and error"
      )
  )
  .add(
    HttpApiEndpoint.post("replay", "/api/user/channels/:channel/deliveries/:message/replay")
      .setPath(Schema.Struct({ channel: ChannelIdFromString, message: Schema.String.pipe(maxChars(64)) }))
      .addSuccess(Ok(Replay, { message: "Delivery replay started." }))
      .addError(ChannelNotFoundResponse)
      .addError(MessageNotFoundResponse)
      .middleware(Authorized["channels:write"])
      .annotate(
        OpenApi.Summary,
        "Deliver a reply again (same message_id, two attempts), e.g. after fixing the receiver"
      )
  )
  .annotate(OpenApi.Title, "Channels")
  .annotate(
    OpenApi.Description,
    "Messaging channels and their credentials. Scopes `channels:read` and `channels:write`."
  )
{}
