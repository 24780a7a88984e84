/**
 * Handoff timers are durable (issue 19): a conversation waiting for a person whose pipeline's timeout
 * runs out while no server runs is handed back when a server is built again on the same database
 * (support/FileServer.ts: a data dir's, or a native one in the postgres project), by that server (its
 * timeout event is later than the restart), once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { boot, FileServerLive, freshDatabase } from "./support/FileServer.js"
import { createStage, get, linkWebChannel, ok, post, sqlRows } from "./support/Opportunities.js"
import { giveCredits, seedUser } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

describe("handoff timeouts across restarts", () => {
  it.live("a wait that runs out while the server is down is handed back by the next server, once", () =>
    Effect.scoped(Effect.gen(function*() {
      const database = yield* freshDatabase("parley-handoff-")
      const first = yield* boot(FileServerLive(database))
      const { owner, id, dueAt } = yield* first.run(Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id, { credits: 100, is_subscription_active: true })
        const pipeline = ok(
          yield* post(owner, "/api/user/pipelines", {
            name: "Timeouts",
            agent_type_id: 1,
            ai_model_id: 1,
            language_id: 1,
            reply_debounce_ms: 0,
            handoff_timeout_seconds: 3600,
            handoff_timeout_action: "return"
          }),
          "pipelines.create"
        )
        yield* createStage(owner, pipeline.id, "Open", 1)
        const channel = yield* linkWebChannel(owner, pipeline.id)
        yield* say(channel, "restart-1", "Hello")
        const id = (yield* sqlRows<
          { id: number }
        >`select conversation_id as id from messages where external_chat_id = 'restart-1'`)[0]!.id
        ok(
          yield* post(owner, `/api/user/conversations/${id}/handoff`, { action: "request", reason: "Needs a person" }),
          "conversations.handoff"
        )
        // the hour is shortened to two seconds from now, so it runs out while no server runs
        const due = (yield* sqlRows<{ due: string }>`
          update conversations set handoff_due_at = now() + interval '2 seconds' where id = ${id} returning handoff_due_at as due`)[
          0
        ]!.due
        return { owner, id, dueAt: Date.parse(due) }
      }))
      yield* first.close
      // wait out the timeout while down: measured, not guessed
      yield* Effect.sleep(Math.max(0, dueAt - Date.now()) + 200)

      const restartedAt = Date.now()
      const second = yield* boot(FileServerLive(database))
      yield* second.run(Effect.gen(function*() {
        const after = yield* eventually(
          Effect.map(get(owner, `/api/user/conversations/${id}`), (r) => {
            const c = ok(r, "conversations.get")
            return c.handoff.state === "ai" ? c : undefined
          }),
          20_000
        )
        const events = after.handoff_events.map((e) => [e.action, e.from_state, e.to_state, e.actor])
        expect(events).toEqual([["request", "ai", "waiting", "operator"], ["timeout", "waiting", "ai", "system"]])
        expect(Date.parse(after.handoff_events[1]!.created_at)).toBeGreaterThanOrEqual(restartedAt - 1000)
        expect(after.handoff.due_at).toBeNull()
      }))
      yield* second.close
    })))
})
