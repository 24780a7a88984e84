/**
 * Variables and actions (SPEC.md 4.5): CRUD and its validation, and actions firing against a real HTTP
 * target: stage_started with templated url, headers and payload; retries with each attempt recorded;
 * max_fires; a from_action variable reading an earlier response; an on_user_message action called by the
 * local model as a tool (with a from_ai value) and on_any_message; the private-address guard.
 */
import { expect, layer } from "@effect/vitest"
import { type ActionResult, ReceiverAnswer } from "@parley/domain"
import { backoffMs } from "@parley/worker"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { bodyAs, failure } from "./support/Contract.js"
import {
  type Caller,
  createOpportunity,
  createPipeline,
  createStage,
  del,
  expect422,
  expectStatus,
  freshPhone,
  get,
  linkWebChannel,
  ok,
  post,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { fetchJson, seedUser, TestServer, TestServerLive, tokenFor } from "./support/TestServer.js"
import { basic } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

interface Hit {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** A real node:http target: records each request and answers with what `respond` says. */
const target = (respond: (hit: Hit) => { status: number; body?: unknown }) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; hits: Array<Hit>; server: Http.Server }>((resolve) => {
        const hits: Array<Hit> = []
        const server = Http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            const hit = {
              method: req.method ?? "",
              path: req.url ?? "",
              headers: req.headers,
              body: Buffer.concat(chunks).toString("utf8")
            }
            hits.push(hit)
            const answer = respond(hit)
            res.writeHead(answer.status, { "content-type": "application/json" }).end(
              JSON.stringify(answer.body ?? { ok: answer.status < 300 })
            )
          })
        })
        server.listen(
          0,
          "127.0.0.1",
          () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, server })
        )
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        })
      )
  )

const variable = (who: Caller, pipelineId: number, body: Record<string, unknown>) =>
  Effect.map(
    post(who, `/api/user/pipelines/${pipelineId}/variables`, { is_required: true, ...body }),
    (r) => ok(r, "automation.createVariable")
  )

const action = (who: Caller, pipelineId: number, body: Record<string, unknown>) =>
  Effect.map(
    post(who, `/api/user/pipelines/${pipelineId}/actions`, { method: "POST", is_active: true, ...body }),
    (r) => ok(r, "automation.createAction")
  )

const results = (who: Caller, pipelineId: number, query = "") =>
  Effect.map(
    get(who, `/api/user/pipelines/${pipelineId}/action-results${query}`),
    (r) => ok(r, "automation.actionResults")
  )

/** Waits until the runs matching `done` number `n`, and returns them. */
const runsWhen = (
  who: Caller,
  pipelineId: number,
  n: number,
  done: (r: ActionResult) => boolean = (r) => r.status !== "pending" && r.status !== "sending",
  query = ""
) =>
  eventually(
    Effect.map(results(who, pipelineId, query), (rows) => rows.filter(done).length >= n ? rows : undefined),
    15_000
  )

const moveTo = (who: Caller, opportunityId: number, stageId: number) =>
  Effect.map(
    put(who, `/api/user/opportunities/${opportunityId}`, { stage_id: stageId }),
    (r) => ok(r, "opportunities.update")
  )

layer(
  TestServerLive({
    OUTBOUND_ALLOW_PRIVATE: "true",
    ACTION_RETRY_BASE_MS: "150",
    ENGINE_SWEEP_INTERVAL_MS: "1000",
    WEBHOOK_TIMEOUT_MS: "2000"
  }),
  { excludeTestServices: true }
)("actions", (it) => {
  it.effect("variables: create, list with q, update, delete; bad and duplicate names and malformed values are 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Vars")
      const base = `/api/user/pipelines/${pipeline.id}/variables`
      const created = yield* variable(alice, pipeline.id, {
        name: "opp_id",
        value: "opportunity.id",
        type: "from_system",
        data_type: "integer"
      })
      expect(created).toMatchObject({
        name: "opp_id",
        value: "opportunity.id",
        type: "from_system",
        data_type: "integer",
        is_required: true
      })
      yield* variable(alice, pipeline.id, { name: "api_key", value: "k-1", type: "fixed", is_required: false })
      expect(ok(yield* get(alice, `${base}?q=API`), "automation.listVariables").map((v) => v.name)).toEqual(["api_key"])
      expect(ok(yield* get(alice, base), "automation.listVariables").map((v) => v.name)).toEqual(["api_key", "opp_id"])

      expect422(yield* post(alice, base, { name: "bad name!", value: "x", type: "fixed", is_required: false }), [
        "name"
      ])
      expect422(yield* post(alice, base, { name: "opp_id", value: "x", type: "fixed", is_required: false }), ["name"])
      expect422(
        yield* post(alice, base, {
          name: "v1",
          value: "opportunity.shoe_size",
          type: "from_system",
          is_required: false
        }),
        ["value"]
      )
      expect422(yield* post(alice, base, { name: "v2", value: "contact", type: "from_system", is_required: false }), [
        "value"
      ])
      expect422(
        yield* post(alice, base, { name: "v3", value: "nope.response.id", type: "from_action", is_required: false }),
        ["value"]
      )
      expect422(yield* post(alice, base, { name: "v4", value: "x", type: "computed", data_type: "date" }), [
        "data_type",
        "is_required",
        "type"
      ])

      const updated = ok(
        yield* put(alice, `/api/user/variables/${created.id}`, { value: "opportunity.contact_id", description: "who" }),
        "automation.updateVariable"
      )
      expect(updated).toMatchObject({
        name: "opp_id",
        value: "opportunity.contact_id",
        description: "who",
        data_type: "integer"
      })
      expect422(yield* put(alice, `/api/user/variables/${created.id}`, { name: "api_key" }), ["name"])
      expect(ok(yield* del(alice, `/api/user/variables/${created.id}`), "automation.deleteVariable")).toEqual({
        id: created.id,
        deleted: true
      })
      expectStatus(yield* get(alice, `/api/user/variables/${created.id}`), 404)
    }))

  it.effect("actions: placeholders must be known variables, no raw system placeholders, no from_ai before the AI, retries 1 to 10, fixed triggers stay", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Acts")
      const other = yield* createPipeline(alice, "Other")
      const otherStage = yield* createStage(alice, other.id, "Elsewhere", 1)
      const base = `/api/user/pipelines/${pipeline.id}/actions`
      yield* variable(alice, pipeline.id, { name: "opp_id", value: "opportunity.id", type: "from_system" })
      yield* variable(alice, pipeline.id, { name: "email", value: "The contact's e-mail address", type: "from_ai" })
      const valid = {
        name: "notify",
        method: "POST",
        is_active: true,
        url: "https://example.com/hook/{{opp_id}}",
        fixed_trigger: "stage_started"
      }

      expect422(yield* post(alice, base, { ...valid, url: "https://example.com/{{opportunity.id}}" }), ["url"])
      expect422(yield* post(alice, base, { ...valid, headers: { "X-Id": "{{ unknown_var }}" } }), ["headers.X-Id"])
      expect422(yield* post(alice, base, { ...valid, payload: { who: { email: "{{email}}" } } }), ["payload.who.email"])
      expect422(yield* post(alice, base, { ...valid, fixed_trigger: "on_any_message", payload: { e: "{{email}}" } }), [
        "payload.e"
      ])
      expect422(yield* post(alice, base, { ...valid, retries: 11 }), ["retries"])
      expect422(yield* post(alice, base, { ...valid, headers: { "X-Ok": "a\r\nInjected: 1" } }), ["headers.X-Ok"])
      expect422(yield* post(alice, base, { ...valid, headers: { "Bad Header": "x" } }), ["headers.Bad Header"])
      expect422(yield* post(alice, base, { ...valid, retries: 0, method: "FETCH", max_fires: 0 }), [
        "max_fires",
        "method",
        "retries"
      ])
      expect422(yield* post(alice, base, { ...valid, stage_id: otherStage.id }), ["stage_id"])

      // from_ai is fine where the model calls the action
      const ai = yield* action(alice, pipeline.id, {
        ...valid,
        name: "ai_hook",
        fixed_trigger: "on_user_message",
        payload: { e: "{{email}}" }
      })
      expect(ai).toMatchObject({
        fixed_trigger: "on_user_message",
        retries: 3,
        order: 1,
        max_fires: null,
        stage_id: null
      })
      const created = yield* action(alice, pipeline.id, {
        ...valid,
        headers: { "X-Id": "{{opp_id}}" },
        retries: 10,
        order: 2,
        response_example: { data: { lead: { id: "L-1" } } }
      })
      expect(created.suggested_variables).toEqual(["notify.status", "notify.response.data.lead.id"])
      expect422(yield* post(alice, base, { ...valid, url: "https://example.com" }), ["name"])

      // the trigger of stage_started and on_any_message is fixed; on_user_message and custom swap
      expect422(yield* put(alice, `/api/user/actions/${created.id}`, { fixed_trigger: "custom" }), ["fixed_trigger"])
      expect422(yield* put(alice, `/api/user/actions/${ai.id}`, { fixed_trigger: "stage_started" }), [
        "fixed_trigger",
        "payload.e"
      ])
      expect(
        ok(
          yield* put(alice, `/api/user/actions/${ai.id}`, { fixed_trigger: "custom", is_active: false }),
          "automation.updateAction"
        )
      )
        .toMatchObject({
          fixed_trigger: "custom",
          is_active: false
        })
      expect422(yield* put(alice, `/api/user/actions/${created.id}`, { url: "https://example.com/{{stage.id}}" }), [
        "url"
      ])

      // from_action values are checked against the action and its response example
      const vars = `/api/user/pipelines/${pipeline.id}/variables`
      expect(
        ok(
          yield* post(alice, vars, {
            name: "lead",
            value: "notify.response.data.lead.id",
            type: "from_action",
            is_required: true
          }),
          "automation.createVariable"
        )
      )
        .toMatchObject({ type: "from_action" })
      expect422(
        yield* post(alice, vars, {
          name: "lead2",
          value: "notify.response.data.nope",
          type: "from_action",
          is_required: true
        }),
        ["value"]
      )
      expect(
        ok(
          yield* post(alice, vars, {
            name: "code",
            value: "notify.status",
            type: "from_action",
            is_required: false,
            data_type: "integer"
          }),
          "automation.createVariable"
        )
      )
        .toMatchObject({ data_type: "integer" })
      // a variable used by a stage_started action cannot become from_ai
      const opp = ok(yield* get(alice, vars), "automation.listVariables").find((v) => v.name === "opp_id")
      expect422(yield* put(alice, `/api/user/variables/${opp!.id}`, { type: "from_ai", value: "anything" }), ["type"])

      const listed = ok(yield* get(alice, base), "automation.listActions")
      expect(listed.map((a) => a.name).sort()).toEqual(["ai_hook", "notify"])
      const stage = yield* createStage(alice, pipeline.id, "Open", 1)
      yield* action(alice, pipeline.id, { ...valid, name: "staged", stage_id: stage.id })
      expect(ok(yield* get(alice, `${base}?stage_id=${stage.id}`), "automation.listActions").map((a) => a.name))
        .toEqual([
          "staged"
        ])
      expect(ok(yield* del(alice, `/api/user/actions/${ai.id}`), "automation.deleteAction")).toEqual({
        id: ai.id,
        deleted: true
      })
      expect(ok(yield* get(alice, base), "automation.listActions")).toHaveLength(2)
    }))

  it.effect("another workspace's pipelines, variables and actions are 404; missing scopes are 403", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const mallory = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Private")
      const v = yield* variable(alice, pipeline.id, { name: "k", value: "1", type: "fixed" })
      const a = yield* action(alice, pipeline.id, { name: "a", url: "https://example.com", fixed_trigger: "custom" })
      expectStatus(yield* get(mallory, `/api/user/pipelines/${pipeline.id}/variables`), 404)
      expectStatus(
        yield* post(mallory, `/api/user/pipelines/${pipeline.id}/variables`, {
          name: "x",
          value: "1",
          type: "fixed",
          is_required: false
        }),
        404
      )
      expectStatus(yield* put(mallory, `/api/user/variables/${v.id}`, { value: "2" }), 404)
      expectStatus(yield* del(mallory, `/api/user/variables/${v.id}`), 404)
      expectStatus(yield* get(mallory, `/api/user/pipelines/${pipeline.id}/actions`), 404)
      expectStatus(yield* put(mallory, `/api/user/actions/${a.id}`, { is_active: false }), 404)
      expectStatus(yield* del(mallory, `/api/user/actions/${a.id}`), 404)
      expectStatus(yield* get(mallory, `/api/user/pipelines/${pipeline.id}/action-results`), 404)

      const reader = { token: (yield* tokenFor(alice.email, ["pipelines:read"])).token }
      const none = { token: (yield* tokenFor(alice.email, ["opportunities:read"])).token }
      expect(ok(yield* get(reader, `/api/user/pipelines/${pipeline.id}/actions`), "automation.listActions"))
        .toHaveLength(1)
      expect(ok(yield* get(reader, `/api/user/pipelines/${pipeline.id}/action-results`), "automation.actionResults"))
        .toEqual([])
      expectStatus(
        yield* post(reader, `/api/user/pipelines/${pipeline.id}/actions`, {
          name: "b",
          url: "https://e.com",
          fixed_trigger: "custom",
          method: "GET",
          is_active: true
        }),
        403
      )
      expectStatus(yield* put(reader, `/api/user/variables/${v.id}`, { value: "2" }), 403)
      expectStatus(yield* del(reader, `/api/user/actions/${a.id}`), 403)
      expectStatus(yield* get(none, `/api/user/pipelines/${pipeline.id}/variables`), 403)
      expectStatus(yield* get(none, `/api/user/pipelines/${pipeline.id}/action-results`), 403)
      expect422(yield* get(alice, `/api/user/pipelines/${pipeline.id}/action-results?limit=101`), ["limit"])
    }))

  it.effect("a stage_started action fires once per entry with templated url, headers and payload", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* target(() => ({ status: 200 }))
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Entry")
      const open = yield* createStage(alice, pipeline.id, "Open stage", 1)
      const next = yield* createStage(alice, pipeline.id, "Next stage", 2)
      yield* variable(alice, pipeline.id, { name: "api_key", value: "secret-123", type: "fixed" })
      yield* variable(alice, pipeline.id, {
        name: "opp_id",
        value: "opportunity.id",
        type: "from_system",
        data_type: "integer"
      })
      yield* variable(alice, pipeline.id, {
        name: "contact_email",
        value: "opportunity.contact_email",
        type: "from_system"
      })
      yield* variable(alice, pipeline.id, { name: "stage_name", value: "stage.name", type: "from_system" })
      yield* variable(alice, pipeline.id, { name: "vip", value: "yes", type: "fixed", data_type: "boolean" })
      const notify = yield* action(alice, pipeline.id, {
        name: "notify_crm",
        stage_id: open.id,
        url: `${hook.url}/opps/{{opp_id}}?stage={{stage_name}}`,
        fixed_trigger: "stage_started",
        headers: { "X-Api-Key": "{{api_key}}" },
        payload: {
          id: "{{opp_id}}",
          email: "{{contact_email}}",
          vip: "{{vip}}",
          note: "Entered {{stage_name}} #{{opp_id}}"
        }
      })

      // a draft never fires
      yield* action(alice, pipeline.id, {
        name: "draft",
        url: `${hook.url}/draft`,
        fixed_trigger: "stage_started",
        is_active: false
      })

      const opportunity = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { name: "Ana", email: "ana@example.com" }
      })
      const first = (yield* runsWhen(alice, pipeline.id, 1))[0]!
      expect(hook.hits).toHaveLength(1)
      const hit = hook.hits[0]!
      expect(hit.method).toBe("POST")
      expect(hit.path).toBe(`/opps/${opportunity.id}?stage=Open%20stage`)
      expect(hit.headers["x-api-key"]).toBe("secret-123")
      expect(hit.headers["content-type"]).toBe("application/json")
      expect(JSON.parse(hit.body)).toEqual({
        id: opportunity.id,
        email: "ana@example.com",
        vip: true,
        note: `Entered Open stage #${opportunity.id}`
      })
      expect(first).toMatchObject({
        action_id: notify.id,
        action_name: "notify_crm",
        opportunity_id: opportunity.id,
        trigger: "stage_started",
        status: "succeeded",
        response_status: 200,
        request: {
          method: "POST",
          url: `${hook.url}/opps/${opportunity.id}?stage=Open%20stage`,
          headers: { "X-Api-Key": "secret-123" }
        }
      })
      expect(first.attempts).toHaveLength(1)
      expect(first.attempts[0]).toMatchObject({ attempt: 1, status_code: 200, error: null })

      // another stage: not this action's; back to the open stage: a new entry, one more fire
      yield* moveTo(alice, opportunity.id, next.id)
      yield* moveTo(alice, opportunity.id, open.id)
      yield* runsWhen(alice, pipeline.id, 2)
      yield* Effect.sleep("1 second")
      expect(hook.hits).toHaveLength(2)
      expect(yield* results(alice, pipeline.id)).toHaveLength(2)
      expect(yield* results(alice, pipeline.id, `?opportunity_id=${opportunity.id}&action_id=${notify.id}&limit=1`))
        .toHaveLength(1)
      expect(yield* results(alice, pipeline.id, `?offset=1`)).toHaveLength(1)
      expect(yield* results(alice, pipeline.id, `?opportunity_id=999999999`)).toHaveLength(0)
    })))

  it.effect("a failing target is retried the configured number of times and each attempt is recorded", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* target(() => ({ status: 503, body: { error: "down" } }))
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Retry")
      yield* createStage(alice, pipeline.id, "Open", 1)
      yield* action(alice, pipeline.id, {
        name: "flaky",
        url: `${hook.url}/flaky`,
        fixed_trigger: "stage_started",
        retries: 2
      })
      yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { email: "retry@example.com" } })
      const run = (yield* runsWhen(alice, pipeline.id, 1))[0]!
      expect(hook.hits).toHaveLength(3)
      expect(run.status).toBe("failed")
      expect(run.reason).toContain("HTTP 503")
      expect(run.response_status).toBe(503)
      expect(run.attempts.map((a) => [a.attempt, a.status_code, a.error])).toEqual([[1, 503, "HTTP 503"], [
        2,
        503,
        "HTTP 503"
      ], [3, 503, "HTTP 503"]])
      expect(run.attempts[0]!.response_excerpt).toContain("down")
      // exponential backoff from a 150 ms base with ±20 % jitter: at least 120 ms, then at least 240 ms
      // (upper bounds depend on the engine's polling, so only the lower ones are checked)
      const at = run.attempts.map((a) => Date.parse(a.created_at))
      expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(120 - 5)
      expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(240 - 5)
      for (const attempt of [1, 2, 3]) {
        const wait = backoffMs(150, run.id, attempt)
        expect(wait).toBeGreaterThanOrEqual(150 * 2 ** (attempt - 1) * 0.8)
        expect(wait).toBeLessThanOrEqual(150 * 2 ** (attempt - 1) * 1.2)
        expect(backoffMs(150, run.id, attempt)).toBe(wait)
      }
      yield* Effect.sleep("600 millis")
      expect(hook.hits).toHaveLength(3)
    })))

  it.effect("max_fires 3: three fires go out and a fourth is recorded as skipped", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* target(() => ({ status: 200 }))
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Capped")
      const a = yield* createStage(alice, pipeline.id, "Stage A", 1)
      const b = yield* createStage(alice, pipeline.id, "Stage B", 2)
      yield* action(alice, pipeline.id, {
        name: "capped",
        url: `${hook.url}/capped`,
        fixed_trigger: "stage_started",
        max_fires: 3
      })
      const opportunity = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { email: "cap@example.com" }
      })
      for (const stage of [b, a, b]) {
        yield* moveTo(alice, opportunity.id, stage.id)
      }
      const rows = yield* runsWhen(alice, pipeline.id, 4)
      expect(hook.hits).toHaveLength(3)
      // three fire and one is skipped; on native Postgres the entries' runs may be taken in another order
      // than they were made, so which entry's run is the skipped one is not fixed
      const statuses = rows.map((r) => r.status)
      expect([...statuses].sort()).toEqual(["skipped", "succeeded", "succeeded", "succeeded"])
      const skipped = rows.find((r) => r.status === "skipped")
      expect(skipped!.reason).toContain("max_fires")
      expect(skipped!.attempts).toEqual([])
      expect(skipped!.request).toBeNull()
      // another opportunity has its own count
      yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { email: "cap2@example.com" } })
      yield* runsWhen(alice, pipeline.id, 5)
      expect(hook.hits).toHaveLength(4)
    })))

  it.effect("a from_action variable reads a JSON path of an earlier action's response; a required one unresolved skips the action", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* target((hit) =>
        hit.path === "/leads" ? { status: 201, body: { data: { lead: { id: "L-77" } } } } : { status: 200 }
      )
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Chain")
      yield* createStage(alice, pipeline.id, "Open", 1)
      yield* action(alice, pipeline.id, {
        name: "create_lead",
        url: `${hook.url}/leads`,
        fixed_trigger: "stage_started",
        order: 1,
        response_example: { data: { lead: { id: "L-1" } } }
      })
      yield* variable(alice, pipeline.id, {
        name: "lead_id",
        value: "create_lead.response.data.lead.id",
        type: "from_action"
      })
      yield* variable(alice, pipeline.id, {
        name: "lead_status",
        value: "create_lead.status",
        type: "from_action",
        data_type: "integer"
      })
      // created first, but ordered after create_lead
      yield* action(alice, pipeline.id, {
        name: "tag_lead",
        method: "PUT",
        url: `${hook.url}/leads/{{lead_id}}/tag`,
        fixed_trigger: "stage_started",
        order: 2,
        payload: { status: "{{lead_status}}" }
      })
      // tag_lead has no response example: any path is accepted, and this one is not in its answer
      yield* variable(alice, pipeline.id, {
        name: "missing",
        value: "tag_lead.response.data.nothing",
        type: "from_action"
      })
      yield* action(alice, pipeline.id, {
        name: "never",
        url: `${hook.url}/never/{{missing}}`,
        fixed_trigger: "stage_started",
        order: 3
      })
      yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { email: "chain@example.com" } })
      const rows = yield* runsWhen(alice, pipeline.id, 3)
      expect(hook.hits.map((h) => `${h.method} ${h.path}`)).toEqual(["POST /leads", "PUT /leads/L-77/tag"])
      expect(JSON.parse(hook.hits[1]!.body)).toEqual({ status: 201 })
      const never = rows.find((r) => r.action_name === "never")
      expect(never).toMatchObject({ status: "skipped" })
      expect(never!.reason).toContain("missing")
    })))

  it.effect("an on_user_message action is called by the local model as a tool, with a from_ai value; on_any_message fires for every message", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* target(() => ({ status: 200 }))
      const alice = yield* seedUser()
      yield* sqlRows`update workspaces set credits = 100, is_subscription_active = true where id = ${alice.workspace_id}`
      const pipeline = yield* createPipeline(alice, "Demo desk")
      ok(
        yield* put(alice, `/api/user/pipelines/${pipeline.id}`, {
          reply_debounce_ms: 0,
          instructions: "We sell analytics software."
        }),
        "pipelines.update"
      )
      yield* createStage(alice, pipeline.id, "Open", 1)
      const channel = yield* linkWebChannel(alice, pipeline.id)
      yield* variable(alice, pipeline.id, { name: "email", value: "The contact's e-mail address", type: "from_ai" })
      yield* variable(alice, pipeline.id, { name: "what", value: "message.message", type: "from_system" })
      const demo = yield* action(alice, pipeline.id, {
        name: "book_demo",
        url: `${hook.url}/demo`,
        fixed_trigger: "on_user_message",
        instructions: "Book a product demo",
        payload: { email: "{{email}}" }
      })
      yield* action(alice, pipeline.id, {
        name: "log_all",
        url: `${hook.url}/log`,
        fixed_trigger: "on_any_message",
        payload: { text: "{{what}}" }
      })

      const { baseUrl, receiverUrl } = yield* TestServer
      const session = yield* fetchJson(`${baseUrl}/api/user/web-chat/initiate`, {
        method: "POST",
        headers: { authorization: basic(channel), "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ contact_id: "dana-demo", name: "Dana", phone: freshPhone() })
      })
      expect(session.status).toBe(200)
      const said = yield* fetchJson(`${receiverUrl}/web-chat/message`, {
        method: "POST",
        headers: { authorization: basic(channel), "content-type": "application/json" },
        body: JSON.stringify({
          contact_id: "dana-demo",
          message: "Please book a product demo for me, my email is dana@example.com"
        })
      })
      expect(said.status).toBe(200)

      // the demo call, and on_any_message for the contact's message and for the AI's reply
      const rows = yield* runsWhen(alice, pipeline.id, 3)
      const called = rows.filter((r) => r.action_id === demo.id)
      expect(called).toHaveLength(1)
      expect(called[0]).toMatchObject({
        trigger: "on_user_message",
        status: "succeeded",
        message_id: bodyAs(said, ReceiverAnswer).data!.message_id
      })
      const demoHit = hook.hits.find((h) => h.path === "/demo")!
      expect(JSON.parse(demoHit.body)).toEqual({ email: "dana@example.com" })
      const logged = hook.hits.filter((h) => h.path === "/log").map((h) => JSON.parse(h.body).text)
      expect(logged).toHaveLength(2)
      expect(logged).toContain("Please book a product demo for me, my email is dana@example.com")
      const conversationId = ok(session, "webChat.initiate").conversation_id
      expect(yield* results(alice, pipeline.id, `?conversation_id=${conversationId}`)).toHaveLength(3)
    })))
})

layer(
  TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "false", ACTION_RETRY_BASE_MS: "150", ENGINE_SWEEP_INTERVAL_MS: "1000" }),
  { excludeTestServices: true }
)("actions without OUTBOUND_ALLOW_PRIVATE", (it) => {
  it.effect("a url at a loopback, private, link-local or metadata address is 422 on url, on create and on update", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Saved")
      const base = `/api/user/pipelines/${pipeline.id}/actions`
      const valid = { name: "notify", method: "POST", is_active: true, fixed_trigger: "custom" }
      for (
        const [url, host] of [
          ["http://127.1:8080/hook", "127.0.0.1"],
          ["http://0x7f000001/hook", "127.0.0.1"],
          ["http://[::ffff:127.0.0.1]/hook", "::ffff:7f00:1"],
          ["http://169.254.169.254/latest/meta-data", "169.254.169.254"],
          ["https://10.1.2.3/hook", "10.1.2.3"],
          ["http://[fd00::1]/hook", "fd00::1"],
          // NAT64: the IPv4 address it translates to decides (RFC 6052), and the local-use prefix is private
          ["http://[64:ff9b::7f00:1]/hook", "64:ff9b::7f00:1"],
          ["http://[64:ff9b::a9fe:a9fe]/hook", "64:ff9b::a9fe:a9fe"],
          ["http://[64:ff9b:1::808:808]/hook", "64:ff9b:1::808:808"],
          ["http://localhost:3000/hook", "localhost"]
        ] as const
      ) {
        const r = yield* post(alice, base, { ...valid, url })
        expect422(r, ["url"])
        expect(failure(r).validation[0]!.message).toContain(`${host} is a loopback, private or link-local address`)
        expect(failure(r).validation[0]!.message).toContain("OUTBOUND_ALLOW_PRIVATE")
      }
      // public addresses and names are kept, placeholders outside the host too
      yield* variable(alice, pipeline.id, { name: "lead_id", value: "opportunity.id", type: "from_system" })
      const created = yield* action(alice, pipeline.id, {
        ...valid,
        url: "https://hooks.example.com/leads/{{lead_id}}"
      })
      yield* action(alice, pipeline.id, { ...valid, name: "by_ip", url: "http://8.8.8.8/leads?id={{lead_id}}" })
      yield* action(alice, pipeline.id, {
        ...valid,
        name: "by_nat64",
        url: "http://[64:ff9b::808:808]/leads?id={{lead_id}}"
      })
      expect422(yield* put(alice, `/api/user/actions/${created.id}`, { url: "http://192.168.1.20/leads" }), ["url"])
      const kept = ok(yield* get(alice, base), "automation.listActions").find((a) => a.id === created.id)
      expect(kept!.url).toBe("https://hooks.example.com/leads/{{lead_id}}")
    }))

  it.effect("a private target reached through a {{variable}} host is refused when called, not retried, and recorded as such", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* target(() => ({ status: 200 }))
      const alice = yield* seedUser()
      const pipeline = yield* createPipeline(alice, "Guarded")
      yield* createStage(alice, pipeline.id, "Open", 1)
      // the host is known only when the action runs, so saving cannot refuse it
      const { hostname, port } = new URL(hook.url)
      yield* variable(alice, pipeline.id, { name: "crm_host", value: hostname, type: "fixed" })
      yield* action(alice, pipeline.id, {
        name: "internal",
        url: `http://{{crm_host}}:${port}/internal`,
        fixed_trigger: "stage_started",
        retries: 3
      })
      yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { email: "guard@example.com" } })
      const run = (yield* runsWhen(alice, pipeline.id, 1))[0]!
      expect(hook.hits).toHaveLength(0)
      expect(run.status).toBe("failed")
      expect(run.reason).toContain("private address")
      expect(run.attempts).toHaveLength(1)
      expect(run.attempts[0]).toMatchObject({ attempt: 1, status_code: null })
      expect(run.attempts[0]!.error).toContain("private address")
    })))
})
