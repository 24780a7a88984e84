/**
 * Evals (docs/evals.md) through the real server and the local model: a case that passes, then fails once
 * the instructions change (and the run says so against the one before); actions recorded, not sent, with
 * a real HTTP receiver (the action's URL and an event webhook) that must receive nothing; a handoff
 * expected; judged criteria with the local model's scripted judgement; the sandbox kept out of the inbox,
 * lists and analytics; stored cases, "save as eval case", and another workspace's ids.
 */
import { expect, layer } from "@effect/vitest"
import { EvalRun } from "@parley/domain"
import { Effect, Schema } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { io } from "socket.io-client"
import { mcpSession, textOf } from "./support/McpClient.js"
import {
  type Caller,
  createStage,
  del,
  expect422,
  expectStatus,
  get,
  linkWebChannel,
  ok,
  post,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { call, giveCredits, seedUser, TestServer, TestServerLive, tokenFor } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

/** A real node:http endpoint that counts every request it gets. */
const receiver = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; hits: Array<string>; server: Http.Server }>((resolve) => {
      const hits: Array<string> = []
      const server = Http.createServer((req, res) => {
        hits.push(`${req.method} ${req.url}`)
        req.resume()
        req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"))
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, server }))
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

/** What run_evals and get_eval_run answer (packages/mcp tools/Evals.ts): the run, and what to do next. */
const EvalRunResult = Schema.Struct({ ...EvalRun.fields, next_steps: Schema.Array(Schema.String) })

/** The conversation an operator's socket event is about, if it names one. */
const conversationIdOf = (payload: unknown): unknown =>
  typeof payload === "object" && payload !== null && "conversation_id" in payload ? payload.conversation_id : undefined

const INSTRUCTIONS =
  "On refunds, say “Refunds take 5 business days. Please send your order number so we can start the refund.”"

/** A support pipeline on the local model: a refund stage the agent moves to, a ticket action, handoff on request. */
const supportPipeline = (who: Caller, targetUrl: string) =>
  Effect.gen(function*() {
    const pipeline = ok(
      yield* post(who, "/api/user/pipelines", {
        name: `Support ${Date.now()}`,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1,
        instructions: INSTRUCTIONS,
        reply_debounce_ms: 0
      }),
      "pipelines.create"
    )
    const open = yield* createStage(who, pipeline.id, "Open", 1)
    const refund = ok(
      yield* post(who, `/api/user/pipelines/${pipeline.id}/stages`, {
        name: "Refund requested",
        nature: "neutral",
        order: 2,
        enter_condition: "The contact requests a refund of an order"
      }),
      "pipelines.createStage"
    )
    ok(
      yield* post(who, `/api/user/pipelines/${pipeline.id}/variables`, {
        name: "order_number",
        value: "the order number the contact gave",
        type: "from_ai",
        is_required: true
      }),
      "automation.createVariable"
    )
    ok(
      yield* post(who, `/api/user/pipelines/${pipeline.id}/actions`, {
        name: "create_ticket",
        method: "POST",
        url: `${targetUrl}/tickets`,
        is_active: true,
        fixed_trigger: "on_user_message",
        instructions: "Open a ticket once the contact gives the order number.",
        payload: { order: "{{order_number}}", kind: "refund" }
      }),
      "automation.createAction"
    )
    return { pipeline, open, refund }
  })

const refundCase = {
  name: "refund asks for the order number",
  messages: [
    { text: "Hello, I request a refund of my order", expect: { reply_contains: "order number" } },
    "My order number is 12345 #create_ticket"
  ],
  expect: {
    reply_contains: "5 business days",
    reply_not_contains: "guarantee",
    reply_matches: "\\d+ business days",
    stage: "Refund requested",
    status: "active",
    actions: [{ name: "create_ticket", payload: { order: "12345", kind: "refund" } }],
    handoff: false,
    max_ai_messages: 2,
    max_cost: 1,
    judge: ["the agent asks for the \"order number\" and then mentions the \"refund\""]
  }
}

const humanCase = {
  name: "a person on request",
  stage: "Open",
  context: { plan: "pro" },
  messages: ["I want to talk to a human please"],
  expect: { handoff: true, actions_not_fired: ["create_ticket"], judge: "the agent says \"guaranteed\"" }
}

/** An operator's socket joined to the workspace's room, recording every event it hears. */
const operatorSocket = (token: string, workspaceId: number) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const events: Array<{ name: string; payload: unknown }> = []
    const socket = yield* Effect.acquireRelease(
      Effect.sync(() => io(baseUrl, { transports: ["websocket"], forceNew: true })),
      (socket) => Effect.sync(() => socket.close())
    )
    socket.onAny((name: string, payload: unknown) => events.push({ name, payload }))
    const ack = yield* Effect.promise(() =>
      new Promise<unknown>((resolve) =>
        socket.on("connect", () => socket.emit("join-workspace", { workspace_id: workspaceId, token }, resolve))
      )
    )
    expect(ack).toMatchObject({ status: true })
    return events
  })

/** Reads the run until it is no longer running. */
const finished = (who: Caller, runId: number) =>
  eventually(
    Effect.map(get(who, `/api/user/eval-runs/${runId}`), (r) => {
      const run = ok(r, "evals.getRun")
      return run.status === "running" ? undefined : run
    }),
    60_000
  )

layer(TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", ENGINE_SWEEP_INTERVAL_MS: "1000" }), {
  excludeTestServices: true
})("evals", (it) => {
  it.scoped("a case passes, then fails after an instruction change; actions are recorded and nothing is sent", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      // the local model is free: a price makes the cost (and the credits charged) visible
      yield* sqlRows`update ai_models set input_price_per_million = 100, output_price_per_million = 400 where id = 1`
      const target = yield* receiver
      const { pipeline, refund } = yield* supportPipeline(owner, target.url)
      // a customer's event webhook for every event: an eval must raise none
      ok(yield* post(owner, "/api/user/webhooks", { url: `${target.url}/events` }), "eventWebhooks.create")
      // and an operator following the workspace must hear nothing of it (not even the agent typing)
      const heard = yield* operatorSocket(owner.token, owner.workspace_id)

      const started = yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, {
        cases: [refundCase, humanCase],
        concurrency: 2
      })
      expect(started.status).toBe(202)
      const startedRun = ok(started, "evals.startRun")
      expect(startedRun).toMatchObject({ status: "running", cases: 2, version: "live" })
      const first = yield* finished(owner, startedRun.id)
      const [refundResult, humanResult] = first.results
      expect(refundResult!.verdicts.filter((v) => !v.passed)).toEqual([])
      expect(refundResult!.status).toBe("passed")
      expect(refundResult!.outcome).toMatchObject({
        stage_id: refund.id,
        stage_name: "Refund requested",
        status: "active",
        handoff_requested: false,
        ai_messages: 2
      })
      expect(refundResult!.outcome!.actions).toEqual([
        expect.objectContaining({
          name: "create_ticket",
          status: "recorded",
          method: "POST",
          url: `${target.url}/tickets`,
          payload: { order: "12345", kind: "refund" }
        })
      ])
      expect(refundResult!.verdicts.find((v) => v.expectation === "judge")).toMatchObject({
        passed: true,
        detail: "The agent says \"order number\", then \"refund\"."
      })
      expect(refundResult!.verdicts.find((v) => v.expectation === "reply_contains" && v.message === 1))
        .toMatchObject({ passed: true })
      // the handoff case: asked for a person as expected, but its judged criterion fails with the reason
      expect(humanResult!.outcome!.handoff_requested).toBe(true)
      expect(humanResult!.status).toBe("failed")
      expect(humanResult!.verdicts.filter((v) => !v.passed)).toEqual([
        expect.objectContaining({ expectation: "judge", detail: "The agent never says \"guaranteed\"." })
      ])
      expect(first).toMatchObject({ status: "failed", passed: 1, failed: 1, comparison: null })
      expect(first.cost).toBeGreaterThan(0)
      expect(first.cost).toBeCloseTo(refundResult!.cost + humanResult!.cost, 8)

      // the instructions change: the same case now fails on the reply, and the run says it is newly failing
      ok(
        yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
          instructions: INSTRUCTIONS.replace("5 business days", "two weeks")
        }),
        "pipelines.update"
      )
      const second = yield* finished(
        owner,
        ok(
          yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, { cases: [refundCase, humanCase] }),
          "evals.startRun"
        ).id
      )
      expect(second.results[0]!.status).toBe("failed")
      expect(second.results[0]!.verdicts.filter((v) => !v.passed).map((v) => v.expectation).sort()).toEqual([
        "reply_contains",
        "reply_matches"
      ])
      expect(second.comparison).toMatchObject({
        previous_run_id: first.id,
        previous_passed: 1,
        previous_failed: 1,
        newly_failing: [refundCase.name],
        newly_passing: []
      })

      // nothing left the server: not the action, not the event webhook; the credits paid for the model's calls only
      expect(target.hits).toEqual([])
      const [workspace] = yield* sqlRows<
        { credits: number }
      >`select credits::float8 as credits from workspaces where id = ${owner.workspace_id}`
      expect(workspace!.credits).toBeCloseTo(100 - first.cost - second.cost, 6)
      // and the sandbox is nobody's business: not in the inbox, lists, action results or analytics
      const evalConversations = [...first.results, ...second.results].map((r) => r.conversation_id)
      const inbox = ok(yield* get(owner, "/api/user/conversations"), "conversations.list")
      expect(inbox.conversations.map((c) => c.id).filter((id) => evalConversations.includes(id))).toEqual(
        []
      )
      expect(
        ok(yield* get(owner, `/api/user/opportunities?pipeline_id=${pipeline.id}`), "opportunities.list").data ?? []
      ).toEqual([])
      expect(ok(yield* get(owner, "/api/user/contacts"), "contacts.list").data ?? []).toEqual([])
      expect(heard.filter((e) => evalConversations.some((id) => id === conversationIdOf(e.payload)))).toEqual([])
      expect(ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/action-results`), "automation.actionResults"))
        .toEqual([])
      const analytics = ok(
        yield* get(owner, `/api/user/analytics/summary?workspace_id=${owner.workspace_id}&include_test=true`),
        "analytics.summary"
      )
      expect(analytics).toMatchObject({ opportunities: 0, conversations: 0, messages: 0 })
      expect(
        ok(
          yield* get(owner, `/api/user/analytics/ai-performance?workspace_id=${owner.workspace_id}&include_test=true`),
          "analytics.aiPerformance"
        )
      )
        .toMatchObject({ ai_messages: 0, total_cost: 0 })
      // the runs are listed, newest first
      const runs = ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`), "evals.listRuns")
      expect(runs.map((r) => r.id)).toEqual([second.id, first.id])
    }))

  it.scoped("stored cases run by id or all at once; a conversation is saved as a case with the contact's details taken out", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const target = yield* receiver
      const { open, pipeline, refund } = yield* supportPipeline(owner, target.url)
      const created = yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-cases`, refundCase)
      expect(created.status).toBe(201)
      const createdCase = ok(created, "evals.createCase")
      expect(createdCase).toMatchObject({ name: refundCase.name, source: "api", pipeline_id: pipeline.id })
      expect422(yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-cases`, refundCase), ["name"])
      expect422(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-cases`, {
          ...humanCase,
          stage: "Nowhere",
          expect: { reply_matches: "(" }
        }),
        ["stage", "expect.reply_matches"]
      )
      const run = yield* finished(
        owner,
        ok(yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, {}), "evals.startRun").id
      )
      expect(run).toMatchObject({ status: "passed", cases: 1, passed: 1 })
      expect(run.results[0]!.case_id).toBe(createdCase.id)

      // a real conversation over web chat, saved as a case: e-mail addresses and numbers taken out, what happened
      // expected
      const channel = yield* linkWebChannel(owner, pipeline.id)
      const messageId = yield* say(
        channel,
        "visitor-7",
        "Hi, jane@example.com here, call 4917612345678. I request a refund of my order"
      )
      const [row] = yield* eventually(Effect.map(
        sqlRows<
          { conversation_id: number }
        >`select conversation_id from messages where id = ${messageId} and handled_at is not null`,
        (rows) => (rows.length > 0 ? rows : undefined)
      ))
      const writeOnly = yield* tokenFor(owner.email, ["pipelines:write"])
      expectStatus(
        yield* post(writeOnly, `/api/user/conversations/${row!.conversation_id}/eval-case`, {}),
        403,
        "Missing required scope: conversations:read"
      )
      const saved = yield* post(owner, `/api/user/conversations/${row!.conversation_id}/eval-case`, {
        name: "from chat"
      })
      expect(saved.status).toBe(201)
      const savedCase = ok(saved, "evals.saveConversation")
      expect(savedCase).toMatchObject({
        name: "from chat",
        source: "conversation",
        source_conversation_id: row!.conversation_id,
        definition: {
          stage: open.id,
          messages: ["Hi, [email] here, call [number]. I request a refund of my order"],
          expect: { stage: "Refund requested", status: "active", handoff: false }
        }
      })
      const replay = yield* finished(
        owner,
        ok(
          yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, { case_ids: [savedCase.id] }),
          "evals.startRun"
        ).id
      )
      expect(replay).toMatchObject({ status: "passed", cases: 1 })
      expect(replay.results[0]!.outcome!.stage_id).toBe(refund.id)
      // an eval's own conversation is not a real one to save
      expectStatus(
        yield* post(owner, `/api/user/conversations/${replay.results[0]!.conversation_id}/eval-case`, {}),
        422
      )
      ok(yield* del(owner, `/api/user/eval-cases/${createdCase.id}`), "evals.deleteCase")
      expect(
        ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/eval-cases`), "evals.listCases").map((c) => c.name)
      ).toEqual([
        "from chat"
      ])
    }))

  it.scoped("MCP run_evals plays cases and waits for the verdicts; get_eval_run reads the run; mcp:use alone may read but not run", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const target = yield* receiver
      const { pipeline } = yield* supportPipeline(owner, target.url)
      const mcp = yield* mcpSession(owner.token)
      const run = yield* mcp.ok(
        "run_evals",
        { pipeline_id: pipeline.id, cases: [refundCase], wait_seconds: 60 },
        EvalRunResult
      )
      expect(run).toMatchObject({
        status: "passed",
        cases: 1,
        passed: 1,
        failed: 0,
        next_steps: ["Every case passed."]
      })
      expect(run.results[0]!.outcome!.actions.map((a) => a.status)).toEqual(["recorded"])
      const read = yield* mcp.ok("get_eval_run", { run_id: run.id })
      expect(read).toMatchObject({ id: run.id, status: "passed" })
      const started = yield* mcp.ok(
        "run_evals",
        { pipeline_id: pipeline.id, cases: [humanCase], wait_seconds: 0 },
        EvalRunResult
      )
      expect(started).toMatchObject({
        status: "running",
        next_steps: [`get_eval_run with run_id ${started.id} until status is passed or failed`]
      })
      yield* finished(owner, started.id)
      // a version by its number, as text
      expect((yield* post(owner, `/api/user/pipelines/${pipeline.id}/publish`, {})).status).toBe(201)
      const byNumber = yield* mcp.ok("run_evals", {
        pipeline_id: pipeline.id,
        cases: [refundCase],
        version: "1",
        wait_seconds: 60
      })
      expect(byNumber).toMatchObject({ status: "passed", version: 1, version_number: 1 })
      expect(textOf(yield* mcp.call("run_evals", { pipeline_id: pipeline.id, cases: [refundCase], version: "newest" })))
        .toContain(
          "must be live, published, draft or a version number"
        )
      expect(textOf(yield* mcp.call("run_evals", { pipeline_id: pipeline.id, cases: [refundCase], version: "7" })))
        .toContain("version")
      const limited = yield* mcpSession((yield* tokenFor(owner.email, ["mcp:use"])).token)
      expect(textOf(yield* limited.call("run_evals", { pipeline_id: pipeline.id, cases: [humanCase] }))).toBe(
        "Missing required scope: pipelines:write"
      )
      expect((yield* limited.ok("get_eval_run", { run_id: run.id }, EvalRunResult)).id).toBe(run.id)
      expect(target.hits).toEqual([])
    }))

  it.scoped("a version the pipeline does not have is refused; another workspace's pipelines, cases and runs are not found", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const stranger = yield* seedUser()
      const target = yield* receiver
      const { pipeline } = yield* supportPipeline(owner, target.url)
      expect422(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, { version: 9, cases: [refundCase] }),
        ["version"]
      )
      expect422(yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, {}), ["cases"])
      expect422(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, { cases: [refundCase, refundCase] }),
        ["cases.1.name"]
      )
      expect422(yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-runs`, { case_ids: [999999] }), [
        "case_ids.0"
      ])
      const stored = ok(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/eval-cases`, refundCase),
        "evals.createCase"
      )
      expectStatus(
        yield* post(stranger, `/api/user/pipelines/${pipeline.id}/eval-runs`, { cases: [refundCase] }),
        404,
        "Pipeline not found."
      )
      expectStatus(yield* get(stranger, `/api/user/pipelines/${pipeline.id}/eval-cases`), 404, "Pipeline not found.")
      expectStatus(yield* get(stranger, `/api/user/eval-cases/${stored.id}`), 404, "Eval case not found.")
      expectStatus(yield* del(stranger, `/api/user/eval-cases/${stored.id}`), 404, "Eval case not found.")
      const readOnly = yield* call(`/api/user/pipelines/${pipeline.id}/eval-runs`, {
        method: "POST",
        token: (yield* seedUser({ scopes: ["pipelines:read"] })).token,
        body: {}
      })
      expect(readOnly.status).toBe(403)
    }))
})
