/**
 * The website widget's browser-safe flow: a `widget` channel's public client id plus the page's Origin
 * open a visitor session; the session token (signed by the server) then authorises that one visitor's
 * messages, history and live stream. No channel secret ever reaches a browser.
 */
import { Context, Schema } from "effect"
import type { ChannelId, PipelineId, WorkspaceId } from "./Ids.js"
import type { ConversationId } from "./Opportunities.js"
import { all, maxChars, PageNumber, PerPage } from "./Schemas.js"
import { WebChatSession } from "./WebChat.js"

export const WidgetSessionPayload = Schema.Struct({
  client_id: Schema.String.pipe(
    Schema.minLength(1, { message: () => "is required" }),
    maxChars(255, { message: () => "may not be greater than 255 characters" })
  ),
  session: Schema.optional(
    Schema.String.pipe(maxChars(1000, { message: () => "may not be greater than 1000 characters" }))
  )
}).annotations({ ...all, identifier: "WidgetSessionPayload" })
export type WidgetSessionPayload = typeof WidgetSessionPayload.Type

export class WidgetSession extends Schema.Class<WidgetSession>("WidgetSession")({
  session: Schema.String.annotations({
    description:
      "The visitor's session token: `Authorization: Bearer` for history and the receiver; send it back here to resume"
  }),
  ...WebChatSession.fields,
  messages_url: Schema.String.annotations({
    description: "Where the widget posts the visitor's messages (the receiver's /web-chat/message)"
  }),
  handoff_state: Schema.Literal("ai", "waiting", "human").annotations({
    description:
      "Who has the conversation: `ai`, `waiting` (a person was asked for) or `human`; later changes arrive as `handoff_state` events on the socket"
  })
}) {}

/** A widget channel, as the visitor's requests need it. */
export interface WidgetChannel {
  readonly id: ChannelId
  readonly workspace_id: WorkspaceId
  readonly pipeline_id: PipelineId | null
  readonly client_id: string
  readonly allowed_origins: ReadonlyArray<string>
  readonly allowed_ips: ReadonlyArray<string>
  readonly callback_url: string | null
}

/** The visitor behind a request's widget session token. */
export interface WidgetVisitor {
  readonly channel: WidgetChannel
  readonly contactKey: string
  readonly conversationId: ConversationId
}
export class CurrentVisitor extends Context.Tag("@parley/domain/CurrentVisitor")<CurrentVisitor, WidgetVisitor>() {}

export const WidgetHistoryQuery = Schema.Struct({
  per_page: Schema.optionalWith(PerPage, { default: () => 20 }),
  page: Schema.optionalWith(PageNumber, { default: () => 1 })
}).annotations(all)
export type WidgetHistoryQuery = typeof WidgetHistoryQuery.Type

/** What the visitor's request for a person came to. */
export class WidgetHandoff extends Schema.Class<WidgetHandoff>("WidgetHandoff")({
  state: Schema.Literal("ai", "waiting", "human")
}) {}
