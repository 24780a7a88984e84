/**
 * A turn reads its configuration once, at its start (docs/versions.md): a version published while the
 * model is answering does not change that reply; the conversation's next turn runs the new version. The
 * local model is slowed down so the publish lands inside the turn, after the agent is seen typing (which
 * a turn signals once it has read its snapshot). An action the model calls in that turn is recorded
 * with the turn's version too.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { io, type Socket } from "socket.io-client"
import { type Caller, createStage, linkWebChannel, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { call, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

const LATENCY_MS = 4000

/** A socket.io client on a workspace's operator channel, collecting what it receives. */
const operatorSocket = (token: string, workspaceId: number) =>
  Effect.acquireRelease(
    Effect.flatMap(TestServer, ({ baseUrl }) =>
      Effect.promise(() =>
        new Promise<{ socket: Socket; events: Array<{ name: string; payload: unknown }> }>((resolve) => {
          const socket = io(baseUrl, { transports: ["websocket"], forceNew: true })
          const events: Array<{ name: string; payload: unknown }> = []
          socket.onAny((name, payload) =>
            events.push({ name, payload })
          )
          socket.on(
            "connect",
            () => socket.emit("join-workspace", { workspace_id: workspaceId, token }, () => resolve({ socket, events }))
          )
        })
      )),
    ({ socket }) => Effect.sync(() => socket.close())
  )

/** An `agent_typing` event's payload that says the agent is typing. */
const typing = Schema.is(Schema.Struct({ typing: Schema.Literal(true) }))

const replyRow = (messageId: string) =>
  Effect.map(
    sqlRows<{ message: string | null }>`select message from messages where in_reply_to = ${messageId}`,
    (rows) => rows[0]
  )

layer(TestServerLive({ LOCAL_MODEL_LATENCY_MS: String(LATENCY_MS) }), { excludeTestServices: true })(
  "pipeline versions in a turn",
  (it) => {
    it.scoped("a version published while the model answers does not change that reply; the next turn runs it", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        ok(
          yield* call(`/api/user/workspaces/${owner.workspace_id}/settings`, {
            method: "PATCH",
            token: owner.token,
            body: { drafts: true }
          }),
          "versions.updateSettings"
        )
        const pipeline = ok(
          yield* post(owner, "/api/user/pipelines", {
            name: "Mid-turn",
            agent_type_id: 1,
            ai_model_id: 1,
            language_id: 1,
            instructions: "On refunds, say “Refunds take 5 business days.”",
            reply_debounce_ms: 0
          }),
          "pipelines.create"
        )
        yield* createStage(owner, pipeline.id, "Open", 1)
        const channel = yield* linkWebChannel(owner, pipeline.id)
        expect((yield* post(owner as Caller, `/api/user/pipelines/${pipeline.id}/publish`, {})).status).toBe(201)
        ok(
          yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
            instructions: "On refunds, say “Refunds take two weeks.”"
          }),
          "pipelines.update"
        )
        const live = yield* operatorSocket(owner.token, owner.workspace_id)

        const first = yield* say(channel, "mid-1", "How long do refunds take?")
        // the turn has read its snapshot and waits on the model: publish now
        yield* eventually(
          Effect.sync(() => live.events.some((e) => e.name === "agent_typing" && typing(e.payload))),
          LATENCY_MS
        )
        expect((yield* post(owner as Caller, `/api/user/pipelines/${pipeline.id}/publish`, {})).status).toBe(201)
        expect(yield* replyRow(first)).toBeUndefined()
        const reply = yield* eventually(replyRow(first), 30_000)
        expect(reply.message).toContain("5 business days")

        const second = yield* say(channel, "mid-1", "How long do refunds take?")
        expect((yield* eventually(replyRow(second), 30_000)).message).toContain("two weeks")
      }))

    it.scoped("an action the model calls in that turn runs as the version the turn started on", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        ok(
          yield* call(`/api/user/workspaces/${owner.workspace_id}/settings`, {
            method: "PATCH",
            token: owner.token,
            body: { drafts: true }
          }),
          "versions.updateSettings"
        )
        const pipeline = ok(
          yield* post(owner, "/api/user/pipelines", {
            name: "Mid-turn action",
            agent_type_id: 1,
            ai_model_id: 1,
            language_id: 1,
            reply_debounce_ms: 0
          }),
          "pipelines.create"
        )
        yield* createStage(owner, pipeline.id, "Open", 1)
        const action = ok(
          yield* post(owner, `/api/user/pipelines/${pipeline.id}/actions`, {
            name: "create_ticket",
            method: "POST",
            url: "https://tickets.example.com/v1",
            is_active: true,
            fixed_trigger: "custom",
            instructions: "Open a ticket when the contact asks for one."
          }),
          "automation.createAction"
        )
        const channel = yield* linkWebChannel(owner, pipeline.id)
        expect((yield* post(owner as Caller, `/api/user/pipelines/${pipeline.id}/publish`, {})).status).toBe(201)
        ok(
          yield* put(owner, `/api/user/actions/${action.id}`, { url: "https://tickets.example.com/v2" }),
          "automation.updateAction"
        )
        const versionId = (number: number) =>
          Effect.map(
            sqlRows<
              { id: number }
            >`select id from pipeline_versions where pipeline_id = ${pipeline.id} and number = ${number}`,
            (rows) => Number(rows[0]!.id)
          )
        const live = yield* operatorSocket(owner.token, owner.workspace_id)

        const asked = yield* say(channel, "mid-2", "Please open one for me #create_ticket")
        yield* eventually(
          Effect.sync(() => live.events.some((e) => e.name === "agent_typing" && typing(e.payload))),
          LATENCY_MS
        )
        expect((yield* post(owner as Caller, `/api/user/pipelines/${pipeline.id}/publish`, {})).status).toBe(201)
        yield* eventually(replyRow(asked), 30_000)
        const runs = yield* sqlRows<
          { config_version_id: number }
        >`select config_version_id from action_runs where message_id = ${asked}`
        expect(runs.map((r) => Number(r.config_version_id))).toEqual([yield* versionId(1)])
        expect(yield* versionId(2)).not.toBe(yield* versionId(1))
      }))
  }
)
