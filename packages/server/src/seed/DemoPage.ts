/**
 * The first-run demo at `/` (embedded database with the demo seed): a page embedding the web-chat widget
 * for the demo's widget channel, next to a live view of the visitor's own opportunity and the reply
 * webhooks delivered to `/demo/webhook`, a sink on this server that verifies each signature as a
 * business's receiver would. Without the demo, `/` is a short page of links.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { ulid, verifyServiceSignature } from "@parley/domain"
import { Effect, Layer } from "effect"
import { readAsset } from "../Assets.js"
import { AppConfig, publicBaseUrl, receiverBaseUrl } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"
import { escapeHtml, htmlResponse, type PagePolicy, scriptNonce } from "../http/PageHeaders.js"
import { Widget } from "../widget/Widget.js"
import { type DemoCredentials, readDemoCredentials } from "./Demo.js"

const template = readAsset("demo.html").toString("utf8")

const landing = (api: string) =>
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}</style></head>
<body><main><h1>Parley is running</h1>
<ul><li><a href="${api}/docs">API reference</a> (<a href="${api}/openapi.json">OpenAPI</a>)</li>
<li><a href="${api}/account">Your account</a>: tokens and connected MCP clients</li></ul>
<p>The live demo page appears here when the demo workspace is seeded (<code>PARLEY_SEED_DEMO=true</code>, the default on the embedded database).</p>
</main></body></html>`

const originOf = (url: string) => {
  try {
    return [new URL(url).origin]
  } catch {
    return []
  }
}

/**
 * The demo page's one inline script and widget.js run by nonce; the widget talks to the API (fetch and
 * its socket) and to the receiver, and shows files from the API.
 */
const demoPolicy = (nonce: string, api: string, receiver: string): PagePolicy => {
  const apiOrigin = originOf(api)
  return {
    "script-src": [`'nonce-${nonce}'`],
    "style-src": ["'unsafe-inline'"],
    "connect-src": [...apiOrigin, ...apiOrigin.map((o) => o.replace(/^http/, "ws")), ...originOf(receiver)],
    "img-src": ["'self'", ...apiOrigin, "blob:"]
  }
}

const html = (body: string, policy: PagePolicy) => htmlResponse(body, policy, { cache: "no-store" })

const json = (status: number, body: unknown) => HttpServerResponse.unsafeJson(body, { status })

/**
 * The demo's credentials, read from the data dir until they name the widget channel (the seed writes it at
 * start), then kept: the state endpoint is polled every second by each open demo page.
 */
const withWidget = new Map<string, DemoCredentials>()
const demoOf = Effect.map(AppConfig, (config) => {
  if (!config.seedDemo) return undefined
  const kept = withWidget.get(config.dataDir)
  if (kept !== undefined) return kept
  const demo = readDemoCredentials(config.dataDir)
  if (demo?.widget !== undefined && demo.whatsapp !== undefined) withWidget.set(config.dataDir, demo)
  return demo
})

const page = Effect.gen(function*() {
  const config = yield* AppConfig
  const request = yield* HttpServerRequest.HttpServerRequest
  const api = publicBaseUrl(config, request.headers)
  const demo = yield* demoOf
  if (demo?.widget === undefined) return html(landing(escapeHtml(api)), { "style-src": ["'unsafe-inline'"] })
  const receiver = receiverBaseUrl(config, yield* Effect.flatMap(BoundAddresses, (b) => b.receiver))
  const nonce = scriptNonce()
  return html(
    template.replaceAll("__CLIENT_ID__", escapeHtml(demo.widget.client_id)).replaceAll("__API__", escapeHtml(api))
      .replaceAll("__NONCE__", nonce).replaceAll("__WHATSAPP__", escapeHtml(demo.whatsapp?.simulator_path ?? "")),
    demoPolicy(nonce, api, receiver)
  )
})

/** The visitor's opportunity (stage, status, tags), the pipeline's stages, and the webhook attempts of its replies. */
const state = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const demo = yield* demoOf
  if (demo?.widget === undefined) return json(404, { message: "Not found." })
  const token = /^bearer (.+)$/i.exec(request.headers["authorization"] ?? "")?.[1]
  if (token === undefined) return json(401, { message: "Invalid or expired widget session" })
  const visitor = yield* Effect.either(Effect.flatMap(Widget, (w) => w.authenticate(token, request.headers["origin"])))
  if (visitor._tag === "Left") {
    return json(visitor.left._tag === "Forbidden" ? 403 : 401, { message: visitor.left.message })
  }
  if (visitor.right.channel.id !== demo.widget.id) return json(404, { message: "Not found." })
  const conversationId = visitor.right.conversationId
  const sql = yield* SqlClient.SqlClient
  const [opportunity] = yield* sql<{
    id: number
    name: string | null
    status: string
    stage_id: number
    stage_name: string
    nature: string
    tags: ReadonlyArray<string>
  }>`
    select o.id, o.name, o.status, s.id as stage_id, s.name as stage_name, s.nature,
           coalesce((select json_agg(t.name order by t.name) from opportunity_tags ot join tags t on t.id = ot.tag_id
                     where ot.opportunity_id = o.id), '[]') as tags
    from conversation_opportunity co join opportunities o on o.id = co.opportunity_id join stages s on s.id = o.stage_id
    where co.conversation_id = ${conversationId}
    order by co.created_at desc, o.id desc limit 1`
  const stages = yield* sql<{ id: number; name: string; nature: string }>`
    select id, name, nature from stages where pipeline_id = ${demo.pipeline_id} order by sort_order, id`
  const deliveries = yield* sql<{
    message_id: string
    attempt: number
    status_code: number | null
    duration_ms: number
    error: string | null
    url: string
    created_at: Date
  }>`
    select d.message_id, d.attempt, d.status_code, d.duration_ms, d.error, d.url, d.created_at
    from webhook_deliveries d join messages m on m.id = d.message_id
    where m.conversation_id = ${conversationId} and d.channel_id = ${demo.widget.id}
    order by d.created_at desc, d.id desc limit 20`
  const ok = (code: number | null) => code !== null && code >= 200 && code < 300
  return json(200, {
    opportunity: opportunity === undefined ? null : {
      id: Number(opportunity.id),
      name: opportunity.name,
      status: opportunity.status,
      stage: { id: Number(opportunity.stage_id), name: opportunity.stage_name, nature: opportunity.nature },
      tags: opportunity.tags
    },
    stages: stages.map((s) => ({ ...s, id: Number(s.id) })),
    deliveries: deliveries.map((d) => ({
      message_id: d.message_id,
      status: ok(d.status_code) ? "delivered" : "failed",
      status_code: d.status_code,
      attempts: d.attempt,
      duration_ms: d.duration_ms,
      error: d.error,
      url: d.url,
      created_at: d.created_at,
      delivered_at: ok(d.status_code) ? d.created_at : null
    }))
  })
}).pipe(Effect.orDie)

/** The demo's reply-webhook receiver: verifies the signature (SPEC.md 6.2) with the widget channel's secret. */
const webhook = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const demo = yield* demoOf
  if (demo?.widget === undefined) return json(404, { message: "Not found." })
  const raw = yield* Effect.orElseSucceed(request.text, () => "")
  const signature = request.headers["x-service-signature"]
  const valid = verifyServiceSignature(demo.widget.client_secret, {
    signature,
    timestamp: request.headers["x-service-timestamp"]
  }, raw)
  if (!valid) return json(401, { message: "Invalid signature" })
  return json(200, { received: true, message_id: `demo_${ulid()}` })
})

export const DemoPageRoutes = Layer.mergeAll(
  HttpLayerRouter.add("GET", "/", page),
  // browsers ask for it on every page; an empty answer instead of a 404 in their consoles
  HttpLayerRouter.add(
    "GET",
    "/favicon.ico",
    HttpServerResponse.empty({ status: 204, headers: { "cache-control": "public, max-age=86400" } })
  ),
  HttpLayerRouter.add("GET", "/demo/state", state),
  HttpLayerRouter.add("POST", "/demo/webhook", webhook)
)
