/**
 * Traces (and Effect's metrics) out over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set; nothing
 * otherwise. Spans come from `Effect.fn` names and `withSpan`; the cluster carries trace and span ids in
 * its messages, so an inbound message's turn, model call and delivery, wherever they run, are one trace.
 */
import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { NodeHttpClient } from "@effect/platform-node"
import { Duration, Effect, Layer, Option } from "effect"
import { AppConfig, type Role } from "../config/AppConfig.js"

export const TelemetryLive = (role: Role) =>
  Layer.unwrapEffect(Effect.map(AppConfig, (config) => {
    if (Option.isNone(config.otlpEndpoint)) return Layer.empty
    const resource = { serviceName: config.otelServiceName, attributes: { "parley.role": role } }
    const every = Duration.millis(config.otelExportDelayMs)
    return Layer.mergeAll(
      OtlpTracer.layer({ url: `${config.otlpEndpoint.value}/v1/traces`, resource, exportInterval: every }),
      OtlpMetrics.layer({
        url: `${config.otlpEndpoint.value}/v1/metrics`,
        resource,
        exportInterval: Duration.seconds(15)
      })
    ).pipe(Layer.provide([OtlpSerialization.layerJson, NodeHttpClient.layerUndici]))
  }))
