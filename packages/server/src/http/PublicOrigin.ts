import { HttpServerRequest } from "@effect/platform"
import { PageLinks, PublicOrigin } from "@parley/domain"
import { Effect, Layer } from "effect"
import { AppConfig, publicBaseUrl } from "../config/AppConfig.js"

/** `PublicBaseUrl` for each request: PUBLIC_URL, else the scheme and Host the client used. */
export const PublicOriginLive = Layer.effect(
  PublicOrigin,
  Effect.map(
    AppConfig,
    (config) => Effect.map(HttpServerRequest.HttpServerRequest, (request) => publicBaseUrl(config, request.headers))
  )
)

/** `RequestUrl` for each request: its path and query under the public base URL. */
export const PageLinksLive = Layer.effect(
  PageLinks,
  Effect.map(
    AppConfig,
    (config) =>
      Effect.map(
        HttpServerRequest.HttpServerRequest,
        (request) => new URL(request.url, publicBaseUrl(config, request.headers))
      )
  )
)
