/**
 * Pipeline versions (docs/versions.md) through the real server and the local model: publish, list, get,
 * diff and rollback over REST with scopes, another workspace's ids and bad input; with drafts on, a
 * draft's instruction change reaches conversations only once published and a rollback restores the old
 * replies; with drafts off, edits are live at once; a rollback that would strand opportunities is refused
 * and a move into a stage deleted in the draft is ignored; evals on the draft and the published version,
 * and publish gated by them.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Caller, del, expect422, expectStatus, get, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { call, giveCredits, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"
import { mcpSession, textOf } from "./support/McpClient.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

const FIVE_DAYS = "Refunds take 5 business days."
const TWO_WEEKS = "Refunds take two weeks."

const patch = (who: Caller, path: string, body: unknown) => call(path, { method: "PATCH", token: who.token, body })
const drafts = (who: Caller & { workspace_id: number }, on: boolean) =>
  Effect.map(patch(who, `/api/user/workspaces/${who.workspace_id}/settings`, { drafts: on }), ok)

const refundPipeline = (who: Caller) =>
  Effect.gen(function*() {
    const pipeline = ok(yield* post(who, "/api/user/pipelines", {
      name: `Versions ${Date.now()} ${Math.random()}`,
      agent_type_id: 1,
      ai_model_id: 1,
      language_id: 1,
      instructions: FIVE_DAYS,
      reply_debounce_ms: 0
    }))
    const open = ok(yield* post(who, `/api/user/pipelines/${pipeline.id}/stages`, { name: "Open", nature: "neutral", order: 1 }))
    const channel = ok(yield* post(who, "/api/user/channels", { kind: "web", pipeline_id: pipeline.id }))
    return { pipeline, open, channel }
  })

/** The agent's reply to a contact message (waits until it is stored). */
const replyTo = (messageId: string) =>
  Effect.map(
    eventually(Effect.map(
      sqlRows<{ message: string | null; status: string }>`select message, status from messages where in_reply_to = ${messageId}`,
      (rows) => rows[0]
    ), 30_000),
    (r) => r.message ?? ""
  )

const opportunityOf = (pipelineId: number, contact: string) =>
  Effect.map(
    sqlRows<{ id: number; stage_id: number }>`
      select o.id, o.stage_id from opportunities o join contacts c on c.id = o.contact_id
      where o.pipeline_id = ${pipelineId} and c.identifier = ${contact}`,
    (rows) => rows[0]!
  )

/** A 201 answer's data (publish, rollback). */
const created = (r: { status: number; body: any }) => {
  expect(r.status).toBe(201)
  return r.body.data
}

const finished = (who: Caller, runId: number) =>
  eventually(Effect.map(get(who, `/api/user/eval-runs/${runId}`), (r) => {
    const run = ok(r)
    return run.status === "running" ? undefined : run
  }), 60_000)

const refundCase = {
  name: "refund time",
  messages: ["How long do refunds take?"],
  expect: { reply_contains: "5 business days" }
}

layer(TestServerLive(), { excludeTestServices: true })("pipeline versions", (it) => {
  it.effect("publish, list, get, diff and rollback over REST; scopes, another workspace's ids and bad input", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const { open, pipeline } = yield* refundPipeline(owner)
      const base = `/api/user/pipelines/${pipeline.id}`

      expect(ok(yield* get(owner, `/api/user/workspaces/${owner.workspace_id}/settings`))).toEqual({ workspace_id: owner.workspace_id, drafts: false })
      expect(ok(yield* get(owner, `${base}/versions`))).toMatchObject({ live_version: null, drafts: false, draft_changed: true, versions: [] })

      const published = yield* post(owner, `${base}/publish`, {})
      expect(published.status).toBe(201)
      expect(published.body.message).toBe("Pipeline published successfully.")
      expect(published.body.data).toMatchObject({ number: 1, source: "publish", rolled_back_from: null, is_live: true, published_by_user_id: owner.user_id })
      expect(published.body.data.config.pipeline.instructions).toBe(FIVE_DAYS)
      expect(published.body.data.config.stages.map((s: any) => s.name)).toEqual(["Open"])

      // the draft changes: a setting, a stage added, a stage changed, a variable
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }))
      const later = ok(yield* post(owner, `${base}/stages`, { name: "Later", nature: "won", order: 2 }))
      ok(yield* put(owner, `/api/user/stages/${open.id}`, { instructions: "Greet the contact." }))
      ok(yield* post(owner, `${base}/variables`, { name: "order_number", value: "the order number", type: "from_ai", is_required: false }))
      const diff = ok(yield* get(owner, `${base}/versions/diff`))
      expect(diff).toMatchObject({
        from: 1,
        to: "draft",
        settings: [{ field: "instructions", old: FIVE_DAYS, new: TWO_WEEKS }],
        stages: { added: [{ id: later.id, name: "Later" }], removed: [], changed: [{ id: open.id, name: "Open", fields: [{ field: "instructions", old: null, new: "Greet the contact." }] }] },
        variables: { added: [{ name: "order_number" }], removed: [], changed: [] },
        knowledge_tables: { attached: [], detached: [] }
      })
      expect(diff.text).toContain(`~ setting instructions: "${FIVE_DAYS}" -> "${TWO_WEEKS}"`)
      expect(diff.text).toContain(`+ stage "Later" (${later.id})`)
      expect(ok(yield* get(owner, `${base}/versions`)).draft_changed).toBe(true)

      const second = created(yield* post(owner, `${base}/publish`, {}))
      expect(second).toMatchObject({ number: 2, is_live: true })
      expect(ok(yield* get(owner, `${base}/versions/diff?from=2&to=draft`)).text).toBe("No changes from version 2 to draft.")
      expect(ok(yield* get(owner, `${base}/versions/diff?from=2&to=1`)).stages.removed).toEqual([{ id: later.id, name: "Later" }])

      const rolled = yield* post(owner, `${base}/rollback`, { version: 1 })
      expect(rolled.status).toBe(201)
      expect(rolled.body.data).toMatchObject({ number: 3, source: "rollback", rolled_back_from: 1, is_live: true })
      expect(rolled.body.data.config.pipeline.instructions).toBe(FIVE_DAYS)
      // the answer is the version as stored (published_at, published_by and the snapshot as a read gives them)
      expect(ok(yield* get(owner, `${base}/versions/3`))).toEqual(rolled.body.data)
      const listed = ok(yield* get(owner, `${base}/versions`))
      expect(listed).toMatchObject({ live_version: 3, draft_changed: true })
      expect(listed.versions.map((v: any) => [v.number, v.source, v.is_live])).toEqual([[3, "rollback", true], [2, "publish", false], [1, "publish", false]])
      // the draft is left as it was: it still has the second version's changes
      expect(ok(yield* get(owner, base)).instructions).toBe(TWO_WEEKS)
      expect(ok(yield* get(owner, `${base}/versions/1`)).config.pipeline.instructions).toBe(FIVE_DAYS)

      // bad input: 422 naming the field
      expect422(yield* post(owner, `${base}/rollback`, { version: 9 }), ["version"])
      expect422(yield* post(owner, `${base}/rollback`, { version: "one" }), ["version"])
      expect422(yield* get(owner, `${base}/versions/diff?from=7`), ["from"])
      expect422(yield* get(owner, `${base}/versions/diff?to=latest`), ["to"])
      expect422(yield* patch(owner, `/api/user/workspaces/${owner.workspace_id}/settings`, { drafts: "yes" }), ["drafts"])
      expectStatus(yield* get(owner, `${base}/versions/9`), 404, "Version not found.")

      // scopes: reading needs pipelines:read, publishing pipelines:write
      const reader = yield* tokenFor(owner.email, ["pipelines:read"])
      expect(ok(yield* get(reader, `${base}/versions`)).live_version).toBe(3)
      expectStatus(yield* post(reader, `${base}/publish`, {}), 403, "Missing required scope: pipelines:write")
      expectStatus(yield* post(reader, `${base}/rollback`, { version: 1 }), 403)
      expectStatus(yield* patch(reader, `/api/user/workspaces/${owner.workspace_id}/settings`, { drafts: true }), 403)

      // another workspace's ids answer like missing ones, and change nothing
      const stranger = yield* seedUser()
      expectStatus(yield* get(stranger, `${base}/versions`), 404, "Pipeline not found.")
      expectStatus(yield* get(stranger, `${base}/versions/1`), 404, "Pipeline not found.")
      expectStatus(yield* get(stranger, `${base}/versions/diff`), 404)
      expectStatus(yield* post(stranger, `${base}/publish`, {}), 404)
      expectStatus(yield* post(stranger, `${base}/rollback`, { version: 1 }), 404)
      expectStatus(yield* put(stranger, `${base}/publish-gate`, { is_publish_gated: true }), 404)
      expectStatus(yield* get(stranger, `/api/user/workspaces/${owner.workspace_id}/settings`), 404, "Workspace not found.")
      expectStatus(yield* patch(stranger, `/api/user/workspaces/${owner.workspace_id}/settings`, { drafts: true }), 404)
      expect(ok(yield* get(owner, `${base}/versions`)).versions).toHaveLength(3)
      expect(ok(yield* get(owner, `/api/user/workspaces/${owner.workspace_id}/settings`)).drafts).toBe(false)
    }))

  it.effect("drafts on: a draft's instruction change reaches conversations only once published, and a rollback restores it", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const { channel, pipeline } = yield* refundPipeline(owner)
      const base = `/api/user/pipelines/${pipeline.id}`
      const ask = (contact: string) => Effect.flatMap(say(channel, contact, "How long do refunds take?"), replyTo)

      // drafts off (the default): an edit is live at once
      expect(yield* ask("off-1")).toContain("5 business days")
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }))
      expect(yield* ask("off-2")).toContain("two weeks")
      ok(yield* put(owner, base, { instructions: FIVE_DAYS }))

      // drafts on, never published: live as edited
      expect(yield* drafts(owner, true)).toEqual({ workspace_id: owner.workspace_id, drafts: true })
      expect(yield* ask("on-1")).toContain("5 business days")
      created(yield* post(owner, `${base}/publish`, {}))
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }))
      // the draft changed; conversations, old and new, still run version 1
      expect(yield* ask("on-1")).toContain("5 business days")
      expect(yield* ask("on-2")).toContain("5 business days")
      created(yield* post(owner, `${base}/publish`, {}))
      expect(yield* ask("on-1")).toContain("two weeks")
      created(yield* post(owner, `${base}/rollback`, { version: 1 }))
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
      created(yield* post(owner, `${base}/publish`, {}))
      const refund = ok(yield* post(owner, `${base}/stages`, { name: "Refund requested", nature: "neutral", order: 2, enter_condition: "The contact requests a refund of an order" }))
      const cancel = ok(yield* post(owner, `${base}/stages`, { name: "Cancelled", nature: "neutral", order: 3, enter_condition: "Cancel the subscription, please" }))
      created(yield* post(owner, `${base}/publish`, {}))

      yield* replyTo(yield* say(channel, "strand-1", "I request a refund of my order"))
      expect((yield* opportunityOf(pipeline.id, "strand-1")).stage_id).toBe(refund.id)
      const refused = yield* post(owner, `${base}/rollback`, { version: 1 })
      expect422(refused, ["stages"])
      expect(refused.body.validation[0].message).toContain("\"Refund requested\" holds 1 opportunity")
      expect(ok(yield* get(owner, `${base}/versions`))).toMatchObject({ live_version: 2 })

      // the move into "Cancelled" works while its row exists ...
      yield* replyTo(yield* say(channel, "strand-2", "Please cancel my subscription"))
      const moved = yield* opportunityOf(pipeline.id, "strand-2")
      expect(moved.stage_id).toBe(cancel.id)
      ok(yield* put(owner, `/api/user/opportunities/${moved.id}`, { stage_id: open.id }))
      // ... and is ignored once the draft deleted it (version 2, still live, has it): the turn still replies
      ok(yield* del(owner, `/api/user/stages/${cancel.id}`))
      const reply = yield* replyTo(yield* say(channel, "strand-1", "Please cancel my subscription"))
      expect(reply).not.toBe("")
      expect((yield* opportunityOf(pipeline.id, "strand-1")).stage_id).toBe(refund.id)
    }))

  it.effect("evals: a case passes on the published version and fails on the draft; publish gated by evals", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      yield* drafts(owner, true)
      const { pipeline } = yield* refundPipeline(owner)
      const base = `/api/user/pipelines/${pipeline.id}`
      const run = (version: unknown) =>
        Effect.flatMap(post(owner, `${base}/eval-runs`, { cases: [refundCase], version }), (r) => {
          expect(r.status).toBe(202)
          return finished(owner, r.body.data.id)
        })
      created(yield* post(owner, `${base}/publish`, {}))
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }))

      expect(yield* run("published")).toMatchObject({ status: "passed", version: "live", version_number: 1 })
      const byNumber = yield* run(1)
      expect(byNumber).toMatchObject({ status: "passed", version: 1, version_number: 1 })
      const onDraft = yield* run("draft")
      expect(onDraft).toMatchObject({ status: "failed", version: "draft", version_number: null })
      expect(onDraft.results[0].verdicts.filter((v: any) => !v.passed).map((v: any) => v.expectation)).toEqual(["reply_contains"])
      // compared with the newest run of what is live (version 1), not merely the run before
      expect(onDraft.comparison).toMatchObject({ previous_run_id: byNumber.id, previous_passed: 1, newly_failing: ["refund time"] })
      expect422(yield* post(owner, `${base}/eval-runs`, { cases: [refundCase], version: 4 }), ["version"])

      // gated: the failing draft run refuses the publish; a passing one on the unchanged draft allows it
      expect(ok(yield* put(owner, `${base}/publish-gate`, { is_publish_gated: true })).is_publish_gated).toBe(true)
      const gated = yield* post(owner, `${base}/publish`, {})
      expectStatus(gated, 409, `The newest eval run of the draft (${onDraft.id}) failed: publishing needs a passing run.`)
      ok(yield* put(owner, base, { instructions: `${FIVE_DAYS} Refunds go to the card you paid with.` }))
      const passing = yield* run("draft")
      expect(passing.status).toBe("passed")
      expect(passing.comparison.previous_run_id).toBe(byNumber.id)
      ok(yield* put(owner, base, { persona: "Calm" }))
      expectStatus(yield* post(owner, `${base}/publish`, {}), 409, `The draft changed after eval run ${passing.id} passed: run evals on the draft again.`)
      ok(yield* put(owner, base, { persona: null }))
      // back to what the run played: the draft is unchanged since it passed
      const published = yield* post(owner, `${base}/publish`, {})
      expect(published.status).toBe(201)
      expect(published.body.data.number).toBe(2)
      // with drafts off, draft and live are the same tables
      yield* drafts(owner, false)
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }))
      expect(yield* run("live")).toMatchObject({ status: "failed", version_number: null })
    }))

  it.scoped("MCP: publish_pipeline publishes and rolls back, list_pipeline_versions and diff_pipeline_versions read; scopes and other workspaces", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const { pipeline } = yield* refundPipeline(owner)
      const mcp = yield* mcpSession(owner.token)
      expect(yield* mcp.ok("publish_pipeline", { pipeline_id: pipeline.id })).toMatchObject({ number: 1, source: "publish", is_live: true })
      ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { instructions: TWO_WEEKS }))
      const diff = yield* mcp.ok("diff_pipeline_versions", { pipeline_id: pipeline.id })
      expect(diff).toMatchObject({ from: 1, to: "draft", settings: [{ field: "instructions", old: FIVE_DAYS, new: TWO_WEEKS }] })
      expect(diff.text).toBe(`version 1 -> draft:\n~ setting instructions: "${FIVE_DAYS}" -> "${TWO_WEEKS}"`)
      expect(yield* mcp.ok("publish_pipeline", { pipeline_id: pipeline.id })).toMatchObject({ number: 2 })
      expect(yield* mcp.ok("publish_pipeline", { pipeline_id: pipeline.id, version: 1 })).toMatchObject({ number: 3, source: "rollback", rolled_back_from: 1 })
      expect((yield* mcp.ok("diff_pipeline_versions", { pipeline_id: pipeline.id, from: "2", to: "live" })).settings).toEqual([
        { field: "instructions", old: TWO_WEEKS, new: FIVE_DAYS }
      ])
      const listed = yield* mcp.ok("list_pipeline_versions", { pipeline_id: pipeline.id })
      expect(listed).toMatchObject({ live_version: 3, draft_changed: true })
      expect(listed.versions.map((v: any) => v.number)).toEqual([3, 2, 1])
      const bad = yield* mcp.call("publish_pipeline", { pipeline_id: pipeline.id, version: 8 })
      expect(bad.isError).toBe(true)
      expect(textOf(bad)).toContain("version")

      const reader = yield* mcpSession((yield* tokenFor(owner.email, ["mcp:use", "pipelines:read"])).token)
      expect((yield* reader.ok("list_pipeline_versions", { pipeline_id: pipeline.id })).live_version).toBe(3)
      expect(textOf(yield* reader.call("publish_pipeline", { pipeline_id: pipeline.id }))).toBe("Missing required scope: pipelines:write")
      const stranger = yield* mcpSession((yield* seedUser()).token)
      expect(textOf(yield* stranger.call("list_pipeline_versions", { pipeline_id: pipeline.id }))).toBe("Pipeline not found.")
      expect(textOf(yield* stranger.call("publish_pipeline", { pipeline_id: pipeline.id }))).toBe("Pipeline not found.")
    }))

  it.effect("drafts on: actions, opening messages and attached knowledge tables run as published until the next publish", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id, { credits: 100, training_credits: 100 })
      yield* drafts(owner, true)
      const { open, pipeline } = yield* refundPipeline(owner)
      const base = `/api/user/pipelines/${pipeline.id}`
      ok(yield* put(owner, base, { rag_mode: "hybrid", no_of_relevant_points: 1 }))
      ok(yield* put(owner, `/api/user/stages/${open.id}`, {
        is_opening_message: true,
        opening_message_type: "static",
        static_opening_message: "Welcome to version one."
      }))
      ok(yield* post(owner, `${base}/variables`, { name: "order_number", value: "the order number the contact gave", type: "from_ai", is_required: true }))
      const action = ok(yield* post(owner, `${base}/actions`, {
        name: "create_ticket",
        method: "POST",
        url: "https://tickets.example.com/v1",
        is_active: true,
        fixed_trigger: "on_user_message",
        instructions: "Open a ticket once the contact gives the order number.",
        payload: { order: "{{order_number}}", kind: "refund" }
      }))
      const table = ok(yield* post(owner, "/api/user/knowledge-tables", {
        name: `Kettles ${pipeline.id}`,
        columns: [{ name: "name", data_type: "string", order: 1, is_searchable: true }, { name: "sku", data_type: "string", order: 2, is_searchable: true }]
      }))
      ok(yield* put(owner, `/api/user/knowledge-tables/${table.id}/points`, { points: [{ default_id: 1, name: "Blue kettle", sku: "K-77" }] }))
      created(yield* post(owner, `${base}/publish`, {}))

      // the draft: another opening message, another payload and URL, the kettles attached
      ok(yield* put(owner, `/api/user/stages/${open.id}`, { static_opening_message: "Welcome to version two." }))
      ok(yield* put(owner, `/api/user/actions/${action.id}`, { url: "https://tickets.example.com/v2", payload: { order: "{{order_number}}", kind: "exchange" } }))
      ok(yield* put(owner, base, { attach_knowledge_table_ids: [table.id] }))
      const diff = ok(yield* get(owner, `${base}/versions/diff`))
      expect(diff.knowledge_tables).toEqual({ attached: [table.id], detached: [] })
      expect(diff.actions.changed[0].fields.map((f: any) => f.field)).toEqual(["payload", "url"])

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
          return finished(owner, r.body.data.id)
        })
      const live = yield* run("live")
      expect(live.results[0].verdicts.filter((v: any) => !v.passed)).toEqual([])
      expect(live.results[0].outcome.actions).toEqual([expect.objectContaining({ name: "create_ticket", url: "https://tickets.example.com/v1" })])
      const draft = yield* run("draft")
      expect(draft.results[0].verdicts.filter((v: any) => !v.passed).map((v: any) => v.expectation).sort()).toEqual(["action_fired", "reply_contains", "reply_not_contains"])
      expect(draft.results[0].outcome.actions).toEqual([
        expect.objectContaining({ name: "create_ticket", url: "https://tickets.example.com/v2", payload: { order: "12345", kind: "exchange" } })
      ])
      expect(draft.results[0].outcome.transcript.map((t: any) => t.text).join("\n")).toContain("Welcome to version two.")
    }))
})
