/**
 * The website widget's browser-safe flow (docs/web-chat.md, "Website widget"). A `widget` channel has a
 * public client id and no browser secret: a page from one of the channel's allowed origins opens a
 * visitor session, and the session token, signed here, is what authorises that one visitor's messages,
 * history and live stream afterwards. The visitor's contact id is always chosen by the server, so a page
 * can never attach itself to an existing contact.
 */
import {
  ConversationId,
  Forbidden,
  ipAllowed,
  normaliseOrigin,
  TooManyRequests,
  ulid,
  Unauthorized,
  Unprocessable,
  type WidgetChannel,
  WidgetHandoff,
  type WidgetHistoryQuery,
  WidgetSession,
  type WidgetSessionPayload,
  type WidgetVisitor
} from "@parley/domain"
import { Effect, Layer, Option, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { AppConfig } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { Handoff } from "../handoff/Handoff.js"
import { HandoffRepo } from "../handoff/HandoffRepo.js"
import { RateLimits } from "../limits/RateLimits.js"
import { VisitorSessions } from "../webchat/VisitorSessions.js"
import { WebChat } from "../webchat/WebChat.js"

/** Where a session request came from, as the handler read it off the request. */
export interface WidgetClient {
  readonly origin: string | undefined
  readonly address: string
}

export const WIDGET_SESSION_TTL_SECONDS = 30 * 24 * 60 * 60

const invalidClient = new Unauthorized({ message: "Invalid client credentials" })
const invalidSession = new Unauthorized({ message: "Invalid or expired widget session" })
const originRefused = new Forbidden({ message: "Origin not allowed" })

/**
 * A widget channel's allowlist binds it to sites: a browser request must name an allowed origin, and an
 * empty list allows none (unlike a web channel's, which is called from servers). Requests without an
 * Origin (not from a page) pass where a session token already proves the visitor.
 */
export const widgetOriginAllowed = (origin: string | undefined, allowed: ReadonlyArray<string>, required: boolean) =>
  origin === undefined ? !required : allowed.includes(normaliseOrigin(origin))

interface Claims {
  readonly channelId: number
  readonly clientId: string
  readonly contactKey: string
  readonly conversationId: ConversationId
  readonly expires: number
}

/** `wgs1.<base64url JSON claims>.<hex HMAC>`: the client id is in it, so rotating the channel ends every session. */
const sign = (key: Uint8Array, claims: Claims) => {
  const body = Buffer.from(
    JSON.stringify([claims.channelId, claims.clientId, claims.contactKey, claims.conversationId, claims.expires])
  )
    .toString("base64url")
  return `wgs1.${body}.${createHmac("sha256", key).update(`widget:${body}`).digest("hex")}`
}

const verify = (key: Uint8Array, token: string, nowSeconds: number): Claims | undefined => {
  const [version, body, mac] = token.split(".")
  if (version !== "wgs1" || body === undefined || mac === undefined) return undefined
  const expected = Buffer.from(createHmac("sha256", key).update(`widget:${body}`).digest("hex"), "hex")
  const given = Buffer.from(mac, "hex")
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined
  try {
    const [channelId, clientId, contactKey, conversationId, expires] = JSON.parse(
      Buffer.from(body, "base64url").toString("utf8")
    )
    const conversation = Schema.decodeUnknownOption(ConversationId)(conversationId)
    if (typeof expires !== "number" || expires < nowSeconds || Option.isNone(conversation)) return undefined
    return { channelId, clientId, contactKey, conversationId: conversation.value, expires }
  } catch {
    return undefined
  }
}

export class Widget extends Effect.Service<Widget>()("@parley/server/Widget", {
  dependencies: [
    WebChat.Default,
    AppSecret.Default,
    AppConfig.Default,
    Handoff.Default,
    HandoffRepo.Default,
    RateLimits.Default
  ],
  effect: Effect.gen(function*() {
    const webChat = yield* WebChat
    const handoff = yield* Handoff
    const handoffs = yield* HandoffRepo
    const secrets = yield* AppSecret
    const config = yield* AppConfig
    const limits = yield* RateLimits
    const newSessions = { limit: config.widgetSessionsPerHour, windowMs: 3_600_000 }
    const now = () => Math.floor(Date.now() / 1000)

    /** The active widget channel of a client id. */
    const channelOf = (clientId: string) =>
      webChat.channelRow(clientId).pipe(
        Effect.map(Option.filter((c) => c.is_active)),
        Effect.map(Option.map((c) => ({
          kind: c.kind,
          channel: {
            id: c.id,
            workspace_id: c.workspace_id,
            pipeline_id: c.pipeline_id,
            client_id: clientId,
            allowed_origins: c.allowed_origins,
            allowed_ips: c.allowed_ips,
            callback_url: c.callback_url
          } satisfies WidgetChannel
        })))
      )

    /**
     * The visitor a session token names, if it is ours, unexpired, and its channel still the same active widget
     * channel.
     */
    const visitorOf = (token: string) =>
      Effect.gen(function*() {
        const claims = verify(secrets.widgetKey, token, now())
        if (claims === undefined) return Option.none<WidgetVisitor>()
        const found = yield* channelOf(claims.clientId)
        if (Option.isNone(found) || found.value.kind !== "widget" || found.value.channel.id !== claims.channelId) {
          return Option.none<WidgetVisitor>()
        }
        return Option.some<WidgetVisitor>({
          channel: found.value.channel,
          contactKey: claims.contactKey,
          conversationId: claims.conversationId
        })
      })

    /** For the history endpoint and the receiver: 401 for a bad session, 403 from a page of another site. */
    const authenticate = Effect.fn("Widget.authenticate")(function*(token: string, origin: string | undefined) {
      const visitor = yield* visitorOf(token)
      if (Option.isNone(visitor)) return yield* invalidSession
      if (!widgetOriginAllowed(origin, visitor.value.channel.allowed_origins, false)) return yield* originRefused
      return visitor.value
    })

    /** `client` is where the request came from: the page's `Origin` and the peer's address. */
    const session = Effect.fn("Widget.session")(function*(input: WidgetSessionPayload, client: WidgetClient) {
      const found = yield* channelOf(input.client_id)
      if (Option.isNone(found)) return yield* invalidClient
      if (found.value.kind !== "widget") {
        return yield* Unprocessable.of([{
          field: "client_id",
          message: "This endpoint is only available for widget channels."
        }])
      }
      const channel = found.value.channel
      if (!widgetOriginAllowed(client.origin, channel.allowed_origins, true)) return yield* originRefused
      const address = client.address
      if (!ipAllowed(address, channel.allowed_ips)) return yield* new Forbidden({ message: "IP address not allowed" })

      const resumed = input.session === undefined ? Option.none() : yield* visitorOf(input.session).pipe(
        Effect.map(Option.filter((v) => v.channel.id === channel.id))
      )
      if (Option.isNone(resumed)) {
        const taken = yield* limits.take(`widget-session:${channel.id}:${address}`, newSessions)
        if (taken._tag === "Blocked") {
          return yield* new TooManyRequests({
            message: `Too many new chat sessions from this address; try again in ${taken.retryAfter} seconds.`
          })
        }
      }
      const contactKey = Option.match(resumed, { onNone: () => `wg_${ulid()}`, onSome: (v) => v.contactKey })
      const thread = yield* webChat.openThread(channel, contactKey)
      const fields = yield* webChat.sessionFields(contactKey, thread.conversationId)
      return new WidgetSession({
        ...fields,
        session: sign(secrets.widgetKey, {
          channelId: channel.id,
          clientId: channel.client_id,
          contactKey,
          conversationId: thread.conversationId,
          expires: now() + WIDGET_SESSION_TTL_SECONDS
        }),
        messages_url: `${fields.messages_webhook}/web-chat/message`,
        handoff_state: yield* handoffs.stateOf(thread.conversationId).pipe(Effect.orDie)
      })
    })

    /**
     * The web-chat history as the visitor may see it: without `no_reply_reason` and without the errors of
     * the business's side (why the agent is silent, a provider's answer, a failed webhook are the
     * business's, not the visitor's); a reply that could not be made at all (no text) is left out.
     */
    const history = (visitor: WidgetVisitor, query: WidgetHistoryQuery) =>
      webChat.historyOf(visitor.conversationId, query.page, query.per_page).pipe(
        Effect.map((page) => ({
          ...page,
          data: page.data
            .filter((m) =>
              !(m.role === "assistant" && m.status === "failed" && (m.message ?? "") === "" && m.files.length === 0)
            )
            .map((
              { no_reply_reason: _, ...message }
            ) => (message.role === "assistant" ? { ...message, error: null } : message))
        }))
      )

    /** The visitor's "Talk to a person": a request by the contact; asked already, the state as it is. */
    const requestPerson = Effect.fn("Widget.requestPerson")(function*(visitor: WidgetVisitor) {
      const id = visitor.conversationId
      const moved = yield* handoff.moveAsSystem(id, {
        action: "request",
        actor: "contact",
        reason: "The contact asked for a person in the chat"
      }).pipe(
        Effect.map((m) => m.to),
        Effect.catchTag("HandoffConflict", () => handoffs.stateOf(id)),
        Effect.orDie
      )
      return new WidgetHandoff({ state: moved })
    })

    return { session, authenticate, history, requestPerson }
  })
}) {}

/** The receiver's port for widget visitors (webchat/VisitorSessions.ts), answered by this service. */
export const VisitorSessionsLive = Layer.effect(
  VisitorSessions,
  Effect.map(Widget, (w) => ({ authenticate: w.authenticate }))
)
