/**
 * What an operator sees of a real `parley serve` (issue 18): one inbound message is one trace from the
 * receiver through the conversation entity, the model call and the webhook delivery (exported over
 * OTLP/HTTP to a local collector, parent links intact); `/metrics` in Prometheus' text format counts
 * requests, replies, deliveries and model tokens; LOG_FORMAT=json writes one object a line with the
 * request id and trace ids.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  type ChildDatabase,
  childDatabase,
  type Running,
  serve,
  startReceiver,
  stop,
  until
} from "./support/ChildServer.js"
import { startFakeModelServer } from "./support/FakeModelServer.js"
import { type ReceivedSpan, startOtlpReceiver } from "./support/OtlpReceiver.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-observability-"))
let database: ChildDatabase
let server: Running
let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>
let webhook: Awaited<ReturnType<typeof startReceiver>>
let metricsUrl: string
let demo: { token: string; channel: { id: number; client_id: string; client_secret: string } }

beforeAll(async () => {
  otlp = await startOtlpReceiver()
  webhook = await startReceiver(() => ({ status: 200, body: JSON.stringify({ message_id: "ext-obs" }) }))
  database = await childDatabase(dataDir)
  server = await serve(dataDir, {
    ...database.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_SERVICE_NAME: "parley-test",
    OTEL_BSP_SCHEDULE_DELAY: "200",
    METRICS_PORT: "0",
    LOG_FORMAT: "json",
    LOG_LEVEL: "Debug"
  })
  metricsUrl = /Metrics\s+(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(server.output())![1]!
  demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
  const channel = await fetch(`${server.api}/api/user/channels/${demo.channel.id}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${demo.token}`, "content-type": "application/json" },
    body: JSON.stringify({ callback_url: webhook.url })
  })
  expect(channel.status).toBe(200)
}, 300_000)

afterAll(async () => {
  await stop(server)
  await otlp?.close()
  await webhook?.close()
  await database?.drop()
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

const basic = () => `Basic ${Buffer.from(`${demo.channel.client_id}:${demo.channel.client_secret}`).toString("base64")}`

/** The chain of span names from `span` up to the root of its trace. */
const ancestry = (span: ReceivedSpan, spans: ReadonlyArray<ReceivedSpan>) => {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  const chain: Array<string> = []
  for (
    let s: ReceivedSpan | undefined = span;
    s !== undefined;
    s = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId)
  ) {
    chain.push(s.name)
  }
  return chain
}

describe("observability of a running server", () => {
  it(
    "one inbound message is one trace from the receiver to the webhook delivery, every span's parent in it",
    async () => {
      const sent = await fetch(`${server.receiver}/web-chat/message`, {
        method: "POST",
        headers: { authorization: basic(), "content-type": "application/json", "x-request-id": "obs-trace-1" },
        body: JSON.stringify({ contact_id: "obs-visitor", message: "What does the Growth plan cost?" })
      })
      expect(sent.status).toBe(200)
      await until("the reply webhook", () => webhook.hits.length > 0 ? true : undefined, 120_000)
      const delivery = await until(
        "the delivery span",
        () => otlp.spans.find((s) => s.name === "ChannelDelivery.attempt"),
        60_000
      )
      const trace = otlp.spans.filter((s) => s.traceId === delivery.traceId)
      const chain = ancestry(delivery, trace)
      // the delivery descends from the conversation entity's handling, which descends from the receiver
      expect(chain[0]).toBe("ChannelDelivery.attempt")
      expect(chain).toContain("Receiver.message")
      expect(chain.some((name) => name.startsWith("Conversation.Inbound"))).toBe(true)
      expect(chain.at(-1)).toMatch(/^http\.server POST/)
      const root = trace.find((s) => s.parentSpanId === undefined)!
      expect(root.attributes["url.path"]).toBe("/web-chat/message")
      // the model call is in the same trace
      expect(trace.some((s) => /generateText|LanguageModel/.test(s.name))).toBe(true)
      // no span of the trace points at a parent outside it
      const ids = new Set(trace.map((s) => s.spanId))
      expect(trace.filter((s) => s.parentSpanId !== undefined && !ids.has(s.parentSpanId)).map((s) => s.name)).toEqual(
        []
      )
      expect(new Set(trace.map((s) => s.service))).toEqual(new Set(["parley-test"]))
    },
    300_000
  )

  it("a provider's verify handshake is not traced: its query string carries the channel's verify token", async () => {
    const listed = await fetch(`${server.api}/api/user/channels`, {
      headers: { authorization: `Bearer ${demo.token}` }
    })
    const channels = (await listed.json() as { data: Array<{ kind: string; webhook_url: string | null }> }).data
    const whatsapp = channels.find((c) => c.kind === "whatsapp")!
    const token = "pvt_ObservabilityVerifyTokenMustNotLeak"
    const handshake = await fetch(
      `${whatsapp.webhook_url}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=8675309`
    )
    expect(handshake.status).toBe(403)
    // a request after it, traced: once its span is exported, the handshake's would have been too
    const marker = await fetch(`${server.api}/api/user/channels?after=handshake`, {
      headers: { authorization: `Bearer ${demo.token}` }
    })
    expect(marker.status).toBe(200)
    await until(
      "the marker request's span",
      () => otlp.spans.find((s) => String(s.attributes["url.query"] ?? "").includes("after=handshake")),
      60_000
    )
    expect(otlp.spans.filter((s) => JSON.stringify(s.attributes).includes(token)).map((s) => s.name)).toEqual([])
    expect(otlp.spans.filter((s) => String(s.attributes["url.path"] ?? "").endsWith("/webhook"))).toEqual([])

    // a simulated bot's token is part of the simulator's Bot API path: those requests are not traced
    const botToken = "123456789:SimulatedBotTokenMustNotLeakFromSpans"
    const simulated = await fetch(`${server.api}/simulator/telegram-api/bot${botToken}/getMe`, { method: "POST" })
    expect(simulated.status).toBe(401)
    // Telegram's secret comes back in a header of every update: a webhook POST is traced, that header is not
    const secret = "TelegramSecretTokenMustNotLeak"
    const posted = await fetch(whatsapp.webhook_url!, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
      body: JSON.stringify({ update_id: 1 })
    })
    expect(posted.status).toBe(401)
    await until(
      "the webhook POST's span",
      () =>
        otlp.spans.find((s) =>
          s.attributes["http.request.method"] === "POST" && String(s.attributes["url.path"] ?? "").endsWith("/webhook")
        ),
      60_000
    )
    expect(otlp.spans.filter((s) => JSON.stringify(s.attributes).includes(secret)).map((s) => s.name)).toEqual([])
    expect(otlp.spans.filter((s) => JSON.stringify(s.attributes).includes(botToken)).map((s) => s.name)).toEqual([])
  }, 120_000)

  it("/metrics answers Prometheus' text format with the requests, replies, deliveries and model use so far", async () => {
    const response = await fetch(metricsUrl)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
    const text = await response.text()
    const samples = new Map<string, number>()
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line)
      expect(match, `not a sample line: ${line}`).not.toBeNull()
      samples.set(match![1]!, Number(match![2]))
    }
    const value = (prefix: string) => [...samples].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0)
    expect(
      value(
        "parley_http_requests_total{listener=\"receiver\",method=\"POST\",route=\"/web-chat/message\",status=\"200\"}"
      )
    ).toBeGreaterThanOrEqual(1)
    expect(value("parley_http_request_duration_seconds_count{listener=\"receiver\"")).toBeGreaterThanOrEqual(1)
    expect(value("parley_replies_made_total")).toBeGreaterThanOrEqual(1)
    expect(value("parley_reply_latency_seconds_count")).toBeGreaterThanOrEqual(1)
    expect(value("parley_webhook_deliveries_total{outcome=\"delivered\",attempt=\"1\"}")).toBeGreaterThanOrEqual(1)
    expect(value("parley_model_tokens_total{provider=\"local\",model=\"parley-local\",direction=\"output\"}"))
      .toBeGreaterThan(0)
    expect(samples.has("parley_cluster_pending_messages")).toBe(true)
    expect(samples.has("parley_oldest_unhandled_message_seconds")).toBe(true)
    // the wait for the database: the embedded client's one session, or the Postgres pool's connections
    expect(
      value(database.mode === "embedded" ? "parley_db_session_wait_seconds_count" : "parley_db_pool_wait_seconds_count")
    ).toBeGreaterThan(0)
    expect(value("process_resident_memory_bytes")).toBeGreaterThan(0)
    expect(value("nodejs_external_memory_bytes")).toBeGreaterThan(0)
    expect(value("parley_database_size_bytes")).toBeGreaterThan(1_000_000)
    // every histogram's +Inf bucket equals its count
    for (const [key, n] of samples) {
      const inf = /^(.*)_bucket\{(.*),le="\+Inf"\}$/.exec(key) ?? /^(.*)_bucket\{le="\+Inf"\}$/.exec(key)
      if (inf) expect(samples.get(`${inf[1]}_count${inf[2] ? `{${inf[2]}}` : ""}`)).toBe(n)
    }
    // the same metrics go out over OTLP
    await until("metrics over OTLP", () => otlp.metricNames.has("parley_replies_made_total") ? true : undefined, 60_000)
  })

  it("LOG_FORMAT=json writes one JSON object a line with level, message, request id and trace ids", async () => {
    const lines = server.output().split("\n").filter((l) => l.startsWith("{"))
    expect(lines.length).toBeGreaterThan(0)
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    for (const e of entries) {
      expect(typeof e.time).toBe("string")
      expect(typeof e.level).toBe("string")
      expect(typeof e.message).toBe("string")
    }
    // the access line (Debug) of the inbound message carries its request id and its trace
    const withRequest = entries.find((e) => e.request_id === "obs-trace-1")
    expect(withRequest, JSON.stringify(entries.slice(0, 5))).toBeDefined()
    expect(withRequest!.trace_id).toMatch(/^[0-9a-f]{32}$/)
    expect(withRequest!.span_id).toMatch(/^[0-9a-f]{16}$/)
    // an authenticated request's lines name the user and workspace
    const authenticated = entries.find((e) => e.message === "PUT /api/user/channels/:channel 200")
    expect(authenticated).toMatchObject({
      user_id: expect.any(Number),
      workspace_id: expect.any(Number),
      http_status: 200
    })
    // start-up progress and the banner are JSON lines too
    const opening = database.mode === "embedded" ? /embedded database/ : /Connecting to Postgres/
    expect(entries.some((e) => typeof e.startup_seconds === "number" && opening.test(String(e.message)))).toBe(true)
    expect(entries.some((e) => String(e.message).includes("Parley is running."))).toBe(true)
    expect(server.output().split("\n").filter((l) => l.startsWith("[") || l.startsWith("Parley is running"))).toEqual(
      []
    )
  })

  it("a model provider's key and header values are in no answer, span or log line (issue 40)", async () => {
    const key = "sk-ObservabilityProviderKeyMustNotLeak"
    const headerValue = "ObservabilityHeaderValueMustNotLeak"
    const fake = await startFakeModelServer({ apiKey: key, models: ["obs-llama"] })
    try {
      const bearer = { authorization: `Bearer ${demo.token}`, "content-type": "application/json" }
      const created = await fetch(`${server.api}/api/user/ai-providers`, {
        method: "POST",
        headers: bearer,
        body: JSON.stringify({
          kind: "openai_compatible",
          name: "Observed",
          base_url: fake.openAiUrl,
          api_key: key,
          headers: { "X-Org-Secret": headerValue }
        })
      })
      const createdText = await created.text()
      expect(created.status, createdText).toBe(200)
      expect(createdText).not.toContain(key)
      const provider = JSON.parse(createdText).data as { id: number }
      // the check calls the server twice (models, then a tiny chat), both with the key and the header
      const checked = await fetch(`${server.api}/api/user/ai-providers/${provider.id}/check?after=provider-check`, {
        method: "POST",
        headers: bearer,
        body: JSON.stringify({ model: "obs-llama" })
      })
      const checkText = await checked.text()
      expect(JSON.parse(checkText).data).toMatchObject({ ok: true })
      expect(checkText).not.toContain(key)
      expect(fake.requests.some((r) => r.headers.authorization === `Bearer ${key}`)).toBe(true)
      expect(fake.requests.some((r) => r.headers["x-org-secret"] === headerValue)).toBe(true)
      await until(
        "the check's span",
        () => otlp.spans.find((s) => String(s.attributes["url.path"] ?? "").endsWith(`/${provider.id}/check`)),
        60_000
      )
      // the client calls to the model server are traced, without the key or the header's value
      await until(
        "a client span to the model server",
        () => otlp.spans.find((s) => JSON.stringify(s.attributes).includes(fake.origin)),
        60_000
      )
      for (const secret of [key, headerValue]) {
        expect(
          otlp.spans.filter((s) => JSON.stringify(s.attributes).includes(secret)).map((s) =>
            `${s.name} ${JSON.stringify(s.attributes).slice(0, 600)}`
          )
        ).toEqual([])
        expect(server.output()).not.toContain(secret)
      }
    } finally {
      await fake.close()
    }
  }, 120_000)
})
