import { Headers, HttpMiddleware } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import { Sessions } from "./account/Sessions.js"
import { Automation } from "./actions/Automation.js"
import { Analytics } from "./analytics/Analytics.js"
import { Catalogue } from "./catalogue/Catalogue.js"
import { ChannelLinks } from "./channels/ChannelLinks.js"
import { Channels } from "./channels/Channels.js"
import { MailboxRepo } from "./channels/email/MailboxRepo.js"
import { MailboxSyncLive } from "./channels/email/MailboxSync.js"
import { MailIngest } from "./channels/email/MailIngest.js"
import { ProviderCredentials } from "./channels/ProviderCredentials.js"
import { ProviderInbound } from "./channels/ProviderInbound.js"
import { ChannelProviders } from "./channels/Providers.js"
import { SIMULATOR_BOT_API_PATH } from "./channels/telegram/Telegram.js"
import { ChannelTemplates } from "./channels/Templates.js"
import { ChannelWebhookRoutes } from "./channels/Webhook.js"
import { isWebhookPath } from "./channels/WebhookPath.js"
import { AppConfig, type Role } from "./config/AppConfig.js"
import { AppSecret } from "./config/AppSecret.js"
import { Conversations } from "./conversations/Conversations.js"
import { MigrationsLive, SqlLive } from "./db/Database.js"
import { Deliveries } from "./delivery/Deliveries.js"
import { EngineLive, HandlersLive } from "./engine/Engine.js"
import { ModelKeysCheckLive } from "./engine/ModelKeys.js"
import { EvalCases } from "./evals/EvalCases.js"
import { EvalRuns } from "./evals/EvalRuns.js"
import { FileStorage } from "./files/FileStorage.js"
import { Followups } from "./followups/Followups.js"
import { Handoff } from "./handoff/Handoff.js"
import { ApiRoutes, HealthRoutes, NotFoundRoute } from "./http/ApiRoutes.js"
import { ApiPolicy, ReceiverPolicy } from "./http/BodyLimits.js"
import { ApiListener, BoundAddresses, listen, ReceiverListener } from "./http/Listener.js"
import { Readiness } from "./http/Readiness.js"
import { Identity } from "./identity/Identity.js"
import { Knowledge } from "./knowledge/Knowledge.js"
import { KnowledgeSourcesLive } from "./knowledge/SourceDispatch.js"
import { Sources } from "./knowledge/Sources.js"
import { Messages } from "./messages/Messages.js"
import { AiModels } from "./models/AiModels.js"
import { AiProviders } from "./models/AiProviders.js"
import { ProviderChecks } from "./models/ProviderCheck.js"
import { OAuth } from "./oauth/OAuth.js"
import { Opportunities } from "./opportunities/Opportunities.js"
import { Pipelines } from "./pipelines/Pipelines.js"
import { Versions } from "./pipelines/Versions.js"
import { Realtime, RealtimeLive } from "./realtime/Realtime.js"
import { EmailSimulator } from "./simulator/EmailSimulator.js"
import { MetaSimulator } from "./simulator/MetaSimulator.js"
import { TelegramSimulator } from "./simulator/TelegramSimulator.js"
import { TwilioSimulator } from "./simulator/TwilioSimulator.js"
import { WhatsAppSimulator } from "./simulator/WhatsAppSimulator.js"
import { WebChatInbound } from "./webchat/Inbound.js"
import { ReceiverRoutes as WebChatReceiverRoutes } from "./webchat/Receiver.js"
import { WebChat } from "./webchat/WebChat.js"
import { EventWebhooks } from "./webhooks/EventWebhooks.js"
import { VisitorSessionsLive, Widget } from "./widget/Widget.js"
import { Members } from "./workspaces/Members.js"

/** The database after migrations: everything that touches tables is built on this. */
export const databaseWith = (sql: Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, unknown, AppConfig>) =>
  MigrationsLive.pipe(Layer.provideMerge(sql))

export const DatabaseLive = databaseWith(SqlLive)

/** The services of one process. */
const Services = Layer.mergeAll(
  Identity.Default,
  Pipelines.Default,
  Channels.Default,
  Catalogue.Default,
  AppSecret.Default,
  Opportunities.Default,
  Conversations.Default,
  Handoff.Default,
  EventWebhooks.Default,
  WebChat.Default,
  ProviderInbound.Default,
  ChannelProviders.Default,
  ChannelTemplates.Default,
  ChannelLinks.Default,
  WhatsAppSimulator.Default,
  TelegramSimulator.Default,
  MetaSimulator.Default,
  TwilioSimulator.Default,
  EmailSimulator.Default,
  Widget.Default,
  VisitorSessionsLive.pipe(Layer.provide(Widget.Default)),
  WebChatInbound.Default.pipe(Layer.provide(VisitorSessionsLive.pipe(Layer.provide(Widget.Default)))),
  FileStorage.Default,
  BoundAddresses.Default,
  Readiness.Default,
  Deliveries.Default,
  Messages.Default,
  Realtime.Default,
  Analytics.Default,
  Followups.Default,
  Knowledge.Default,
  Sources.Default,
  Automation.Default,
  OAuth.Default,
  Sessions.Default,
  Members.Default,
  EvalCases.Default,
  EvalRuns.Default,
  Versions.Default,
  AiProviders.Default,
  AiModels.Default,
  ProviderChecks.Default
)

/**
 * engine/Engine at the bottom (services send to it), services, and the entity and workflow handlers on top (they use
 * services).
 * Processes that make replies name each active pipeline whose model they cannot call.
 */
export const servicesFor = (role: Role) =>
  Layer.mergeAll(
    HandlersLive,
    // the email channels' mailboxes are read by one runner (a cluster singleton: a client-only process runs none)
    MailboxSyncLive.pipe(
      Layer.provide([MailIngest.Default, MailboxRepo.Default, ProviderCredentials.Default, AppConfig.Default])
    ),
    role === "all" || role === "worker" ? ModelKeysCheckLive : Layer.empty,
    // knowledge sources' syncs are workflows, handed out by one dispatcher (a cluster singleton: SourceDispatch.ts)
    KnowledgeSourcesLive
  ).pipe(
    Layer.provideMerge(Services),
    Layer.provideMerge(EngineLive(role))
  )

export const ServicesLive = servicesFor("all")

/** The api listener with socket.io on it (`Realtime`, built once it serves). */
export const ApiServerLive = RealtimeLive.pipe(Layer.provideMerge(Layer.unwrapEffect(
  Effect.map(
    AppConfig,
    (config) => listen(ApiListener, ApiRoutes, { host: config.host, port: config.port, policy: ApiPolicy })
  )
))).pipe(
  // a simulated bot's token is part of the simulator's Bot API path, and a request span records the path
  HttpMiddleware.withTracerDisabledWhen((request) => request.url.startsWith(`${SIMULATOR_BOT_API_PATH}/`)),
  // the demo's webhook sink is on this listener: outbound calls may reach it (OutboundHttp)
  Layer.tap((context) => Effect.flatMap(BoundAddresses, (b) => b.setApi(Context.get(context, ApiListener).url)))
)

/** The receiver's own host: `POST /web-chat/message`, provider webhooks, health, and the 404 envelope. */
const ReceiverRoutes = Layer.mergeAll(WebChatReceiverRoutes, ChannelWebhookRoutes, HealthRoutes, NotFoundRoute)
export const ReceiverServerLive = Layer.unwrapEffect(
  Effect.map(
    AppConfig,
    (config) =>
      listen(ReceiverListener, ReceiverRoutes, { host: config.host, port: config.receiverPort, policy: ReceiverPolicy })
  )
).pipe(
  // a provider's verify handshake carries its verify token in the query string, which a request span records
  HttpMiddleware.withTracerDisabledWhen((request) =>
    request.method === "GET" && isWebhookPath(request.url.split("?")[0]!)
  ),
  // Telegram's secret comes back in a header on every update, and a request span records headers
  Layer.locallyWith(Headers.currentRedactedNames, (names) => [...names, "x-telegram-bot-api-secret-token"]),
  // clients are told this address when RECEIVER_URL is not set (port 0 binds a free one)
  Layer.tap((context) =>
    Effect.flatMap(BoundAddresses, (b) => b.setReceiver(Context.get(context, ReceiverListener).url))
  )
)

/** Both listeners: the `all` role. */
export const ListenersLive = Layer.merge(ApiServerLive, ReceiverServerLive)
