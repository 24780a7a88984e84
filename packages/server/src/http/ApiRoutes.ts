import { HttpLayerRouter, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Api, errorBody } from "@parley/domain"
import { Effect, Layer } from "effect"
import { AuthorizeRoutes } from "../account/Authorize.js"
import { AccountRoutes } from "../account/Http.js"
import { AutomationHttpLive } from "../actions/Http.js"
import { AnalyticsHttpLive } from "../analytics/Http.js"
import { ChannelsHttpLive } from "../channels/Http.js"
import { ConsoleRoutes } from "../console/Http.js"
import { ConversationsHttpLive } from "../conversations/Http.js"
import { EvalsHttpLive } from "../evals/Http.js"
import { FilesRoute } from "../files/Http.js"
import { FollowupsHttpLive } from "../followups/Http.js"
import { AuthLive } from "../identity/AuthLive.js"
import { AccountHttpLive } from "../identity/Http.js"
import { KnowledgeHttpLive } from "../knowledge/Http.js"
import { McpRoute } from "../mcp/Http.js"
import { MessagesHttpLive, OperatorUploadLimitLive } from "../messages/Http.js"
import { AiModelsHttpLive } from "../models/Http.js"
import { OAuthRoutes } from "../oauth/Http.js"
import { ContactsHttpLive, OpportunitiesHttpLive } from "../opportunities/Http.js"
import { ModelPoolHttpLive, PipelinesHttpLive } from "../pipelines/Http.js"
import { VersionsHttpLive } from "../pipelines/VersionsHttp.js"
import { DemoPageRoutes } from "../seed/DemoPage.js"
import { SimulatorRoutes } from "../simulator/Routes.js"
import { WebChatAuthLive, WebChatHttpLive } from "../webchat/Http.js"
import { EventWebhooksHttpLive } from "../webhooks/Http.js"
import { WidgetAuthLive, WidgetHttpLive, WidgetRoutes } from "../widget/Http.js"
import { WorkspacesHttpLive } from "../workspaces/Http.js"
import { DocsRoutes } from "./Docs.js"
import { PageLinksLive, PublicOriginLive } from "./PublicOrigin.js"
import { Readiness } from "./Readiness.js"

const RestRoutes = HttpLayerRouter.addHttpApi(Api, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([
    AccountHttpLive,
    WorkspacesHttpLive,
    PipelinesHttpLive,
    ChannelsHttpLive,
    OpportunitiesHttpLive,
    ContactsHttpLive,
    ConversationsHttpLive,
    EventWebhooksHttpLive,
    WebChatHttpLive,
    WidgetHttpLive,
    MessagesHttpLive,
    ModelPoolHttpLive,
    AnalyticsHttpLive,
    FollowupsHttpLive,
    KnowledgeHttpLive,
    AutomationHttpLive,
    EvalsHttpLive,
    VersionsHttpLive,
    AiModelsHttpLive
  ]),
  Layer.provide([AuthLive, WebChatAuthLive, WidgetAuthLive, OperatorUploadLimitLive, PublicOriginLive, PageLinksLive])
)

/**
 * `/health`: the process answers. `/ready`: start-up finished (`Readiness`; migrations ran before this layer
 * was built) and the database answers.
 */
export const HealthRoutes = Layer.mergeAll(
  HttpLayerRouter.add("GET", "/health", HttpServerResponse.unsafeJson({ status: "ok" })),
  HttpLayerRouter.add(
    "GET",
    "/ready",
    Effect.gen(function*() {
      if (!(yield* Effect.flatMap(Readiness, (r) => r.isStarted))) {
        return HttpServerResponse.unsafeJson({ status: "starting" }, { status: 503 })
      }
      const sql = yield* SqlClient.SqlClient
      return yield* sql`select 1`.pipe(
        Effect.as(HttpServerResponse.unsafeJson({ status: "ready" })),
        Effect.catchAllCause(() =>
          Effect.succeed(HttpServerResponse.unsafeJson({ status: "unavailable" }, { status: 503 }))
        )
      )
    })
  )
)

/** Anything unmatched gets the error envelope instead of an empty 404. */
export const NotFoundRoute = HttpLayerRouter.add(
  "*",
  "/*",
  HttpServerResponse.unsafeJson(errorBody(404, "Not found."), { status: 404 })
)

export const ApiRoutes = Layer.mergeAll(
  RestRoutes,
  DocsRoutes,
  HealthRoutes,
  FilesRoute,
  McpRoute,
  OAuthRoutes,
  AccountRoutes,
  AuthorizeRoutes,
  ConsoleRoutes,
  WidgetRoutes,
  DemoPageRoutes,
  SimulatorRoutes,
  NotFoundRoute
)
