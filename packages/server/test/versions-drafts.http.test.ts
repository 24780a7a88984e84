/**
 * What conversations run with drafts on (docs/versions.md), through the real server and the local model:
 * a draft's instruction change reaches conversations only once published and a rollback restores the old
 * replies, with drafts off edits are live at once; a rollback that would strand opportunities is refused
 * and a move into a stage deleted in the draft is ignored; actions, opening messages and attached
 * knowledge tables run as published.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { failure } from "./support/Contract.js"
import { del, expect422, get, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive } from "./support/TestServer.js"
import { created, drafts, finished, FIVE_DAYS, refundPipeline, TWO_WEEKS } from "./support/Versions.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

/** The agent's reply to a contact message (waits until it is stored). */
const replyTo = (messageId: string) =>
  Effect.map(
    eventually(
      Effect.map(
        sqlRows<
          { message: string | null; status: string }
        >`select message, status from messages where in_reply_to = ${messageId}`,
        (rows) => rows[0]
      ),
      30_000
    ),
    (r) => r.message ?? ""
  )

const opportunityOf = (pipelineId: number, contact: string) =>
  Effect.map(
    sqlRows<{ id: number; stage_id: number }>`
      select o.id, o.stage_id from opportunities o join contacts c on c.id = o.contact_id
      where o.pipeline_id = ${pipelineId} and c.identifier = ${contact}`,
    (rows) => rows[0]!
  )

layer(TestServerLive(), { excludeTestServices: true })("pipeline versions with drafts on", (it) => {
  it.effect("drafts on: a draft's instruction change reaches conversations only once published, and a rollback restores it", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const { channel, pipeline } = yield* refundPipeline(owner)
      const base = `/api/user/pipelines/${pipeline.id}`
      const ask = (contact: string) => Effect.flatMap(say(channel, contact, "How long do refunds take?"), replyTo)

      // drafts off (the default): an edit is live at once
      expect(yield* ask("off-1")).toContain("5 business days")
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }), "pipelines.update")
      expect(yield* ask("off-2")).toContain("two weeks")
      ok(yield* put(owner, base, { instructions: FIVE_DAYS }), "pipelines.update")

      // drafts on, never published: live as edited
      expect(yield* drafts(owner, true)).toEqual({ workspace_id: owner.workspace_id, drafts: true })
      expect(yield* ask("on-1")).toContain("5 business days")
      created(yield* post(owner, `${base}/publish`, {}), "versions.publish")
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }), "pipelines.update")
      // the draft changed; conversations, old and new, still run version 1
      expect(yield* ask("on-1")).toContain("5 business days")
      expect(yield* ask("on-2")).toContain("5 business days")
      created(yield* post(owner, `${base}/publish`, {}), "versions.publish")
      expect(yield* ask("on-1")).toContain("two weeks")
      created(yield* post(owner, `${base}/rollback`, { version: 1 }), "versions.rollback")
      expect(yield* ask("on-1")).toContain("5 business days")
      // drafts off again: the tables run, whatever is live
      yield* drafts(owner, false)
      expect(yield* ask("on-3")).toContain("two weeks")
    }))

  it.effect("a rollback that would strand opportunities is refused; a move into a stage deleted in the draft is ignored", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      yield* drafts(owner, true)
      const { channel, open, pipeline } = yield* refundPipeline(owner)
      const base = `/api/user/pipelines/${pipeline.id}`
      created(yield* post(owner, `${base}/publish`, {}), "versions.publish")
      const refund = ok(
        yield* post(owner, `${base}/stages`, {
          name: "Refund requested",
          nature: "neutral",
          order: 2,
          enter_condition: "The contact requests a refund of an order"
        }),
        "pipelines.createStage"
      )
      const cancel = ok(
        yield* post(owner, `${base}/stages`, {
          name: "Cancelled",
          nature: "neutral",
          order: 3,
          enter_condition: "Cancel the subscription, please"
        }),
        "pipelines.createStage"
      )
      created(yield* post(owner, `${base}/publish`, {}), "versions.publish")

      yield* replyTo(yield* say(channel, "strand-1", "I request a refund of my order"))
      expect((yield* opportunityOf(pipeline.id, "strand-1")).stage_id).toBe(refund.id)
      const refused = yield* post(owner, `${base}/rollback`, { version: 1 })
      expect422(refused, ["stages"])
      expect(failure(refused).validation[0]!.message).toContain("\"Refund requested\" holds 1 opportunity")
      expect(ok(yield* get(owner, `${base}/versions`), "versions.list")).toMatchObject({ live_version: 2 })

      // the move into "Cancelled" works while its row exists ...
      yield* replyTo(yield* say(channel, "strand-2", "Please cancel my subscription"))
      const moved = yield* opportunityOf(pipeline.id, "strand-2")
      expect(moved.stage_id).toBe(cancel.id)
      ok(yield* put(owner, `/api/user/opportunities/${moved.id}`, { stage_id: open.id }), "opportunities.update")
      // ... and is ignored once the draft deleted it (version 2, still live, has it): the turn still replies
      ok(yield* del(owner, `/api/user/stages/${cancel.id}`), "pipelines.deleteStage")
      const reply = yield* replyTo(yield* say(channel, "strand-1", "Please cancel my subscription"))
      expect(reply).not.toBe("")
      expect((yield* opportunityOf(pipeline.id, "strand-1")).stage_id).toBe(refund.id)
    }))

  it.effect("drafts on: actions, opening messages and attached knowledge tables run as published until the next publish", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id, { credits: 100, training_credits: 100 })
      yield* drafts(owner, true)
      const { open, pipeline } = yield* refundPipeline(owner)
      const base = `/api/user/pipelines/${pipeline.id}`
      ok(yield* put(owner, base, { rag_mode: "hybrid", no_of_relevant_points: 1 }), "pipelines.update")
      ok(
        yield* put(owner, `/api/user/stages/${open.id}`, {
          is_opening_message: true,
          opening_message_type: "static",
          static_opening_message: "Welcome to version one."
        }),
        "pipelines.updateStage"
      )
      ok(
        yield* post(owner, `${base}/variables`, {
          name: "order_number",
          value: "the order number the contact gave",
          type: "from_ai",
          is_required: true
        }),
        "automation.createVariable"
      )
      const action = ok(
        yield* post(owner, `${base}/actions`, {
          name: "create_ticket",
          method: "POST",
          url: "https://tickets.example.com/v1",
          is_active: true,
          fixed_trigger: "on_user_message",
          instructions: "Open a ticket once the contact gives the order number.",
          payload: { order: "{{order_number}}", kind: "refund" }
        }),
        "automation.createAction"
      )
      const table = ok(
        yield* post(owner, "/api/user/knowledge-tables", {
          name: `Kettles ${pipeline.id}`,
          columns: [{ name: "name", data_type: "string", order: 1, is_searchable: true }, {
            name: "sku",
            data_type: "string",
            order: 2,
            is_searchable: true
          }]
        }),
        "knowledge.create"
      )
      ok(
        yield* put(owner, `/api/user/knowledge-tables/${table.id}/points`, {
          points: [{ default_id: 1, name: "Blue kettle", sku: "K-77" }]
        }),
        "knowledge.upsert"
      )
      created(yield* post(owner, `${base}/publish`, {}), "versions.publish")

      // the draft: another opening message, another payload and URL, the kettles attached
      ok(
        yield* put(owner, `/api/user/stages/${open.id}`, { static_opening_message: "Welcome to version two." }),
        "pipelines.updateStage"
      )
      ok(
        yield* put(owner, `/api/user/actions/${action.id}`, {
          url: "https://tickets.example.com/v2",
          payload: { order: "{{order_number}}", kind: "exchange" }
        }),
        "automation.updateAction"
      )
      ok(yield* put(owner, base, { attach_knowledge_table_ids: [table.id] }), "pipelines.update")
      const diff = ok(yield* get(owner, `${base}/versions/diff`), "versions.diff")
      expect(diff.knowledge_tables).toEqual({ attached: [table.id], detached: [] })
      expect(diff.actions.changed[0]!.fields.map((f) => f.field)).toEqual(["payload", "url"])

      const kettleCase = {
        name: "ticket and kettle",
        messages: ["My order number is 12345 #create_ticket", "Which kettle is blue?"],
        expect: {
          reply_contains: "Welcome to version one",
          reply_not_contains: "K-77",
          actions: [{ name: "create_ticket", payload: { order: "12345", kind: "refund" } }]
        }
      }
      const run = (version: string) =>
        Effect.flatMap(post(owner, `${base}/eval-runs`, { cases: [kettleCase], version }), (r) => {
          expect(r.status).toBe(202)
          return finished(owner, ok(r, "evals.startRun").id)
        })
      const live = yield* run("live")
      expect(live.results[0]!.verdicts.filter((v) => !v.passed)).toEqual([])
      expect(live.results[0]!.outcome!.actions).toEqual([
        expect.objectContaining({ name: "create_ticket", url: "https://tickets.example.com/v1" })
      ])
      const draft = yield* run("draft")
      expect(draft.results[0]!.verdicts.filter((v) => !v.passed).map((v) => v.expectation).sort()).toEqual([
        "action_fired",
        "reply_contains",
        "reply_not_contains"
      ])
      expect(draft.results[0]!.outcome!.actions).toEqual([
        expect.objectContaining({
          name: "create_ticket",
          url: "https://tickets.example.com/v2",
          payload: { order: "12345", kind: "exchange" }
        })
      ])
      expect(draft.results[0]!.outcome!.transcript.map((t) => t.text).join("\n")).toContain(
        "Welcome to version two."
      )
    }))
})
