import { HttpServerRequest } from "@effect/platform"
import { PublicOrigin } from "@parley/domain"
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
