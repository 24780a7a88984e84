/**
 * A local OTLP/HTTP (JSON) collector: records the spans and metrics a process exports to
 * `<url>/v1/traces` and `<url>/v1/metrics`, as an OpenTelemetry Collector would receive them.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly service: string | undefined
  readonly attributes: Record<string, unknown>
}

interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly boolValue?: boolean
  readonly doubleValue?: number
}
interface OtlpAttribute {
  readonly key: string
  readonly value: OtlpValue
}

const valueOf = (v: OtlpValue) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue
const attributesOf = (list: ReadonlyArray<OtlpAttribute> | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]))

export const startOtlpReceiver = () =>
  new Promise<{ url: string; spans: Array<ReceivedSpan>; metricNames: Set<string>; close: () => Promise<void> }>(
    (resolve) => {
      const spans: Array<ReceivedSpan> = []
      const metricNames = new Set<string>()
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}")
          if (req.url === "/v1/traces") {
            for (const rs of body.resourceSpans ?? []) {
              const service = attributesOf(rs.resource?.attributes)["service.name"] as string | undefined
              for (const ss of rs.scopeSpans ?? []) {
                for (const s of ss.spans ?? []) {
                  spans.push({
                    traceId: s.traceId,
                    spanId: s.spanId,
                    parentSpanId: s.parentSpanId || undefined,
                    name: s.name,
                    service,
                    attributes: attributesOf(s.attributes)
                  })
                }
              }
            }
          } else if (req.url === "/v1/metrics") {
            for (const rm of body.resourceMetrics ?? []) {
              for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) metricNames.add(m.name)
            }
          }
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          spans,
          metricNames,
          close: () =>
            new Promise<void>((r) => {
              server.closeAllConnections()
              server.close(() => r())
            })
        }))
    }
  )
