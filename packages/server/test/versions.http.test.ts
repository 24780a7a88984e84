/**
 * Pipeline versions (docs/versions.md) through the real server and the local model, managed: publish,
 * list, get, diff and rollback over REST and MCP with scopes, another workspace's ids and bad input;
 * evals on the draft and the published version, and publish gated by them. What conversations run with
 * drafts on is in versions-drafts.http.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { type PipelineVersion, PipelineVersions, VersionDiff } from "@parley/domain"
import { Effect, Schema } from "effect"
import { mcpSession, textOf } from "./support/McpClient.js"
import { type Caller, expect422, expectStatus, get, ok, post, put } from "./support/Opportunities.js"
import { call, giveCredits, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"
import { created, drafts, finished, FIVE_DAYS, refundPipeline, TWO_WEEKS } from "./support/Versions.js"

const patch = (who: Caller, path: string, body: unknown) => call(path, { method: "PATCH", token: who.token, body })

/** The fields of a version's snapshot (`config`) this file reads. */
const Snapshot = Schema.Struct({
  pipeline: Schema.Struct({ instructions: Schema.NullOr(Schema.String) }),
  stages: Schema.Array(Schema.Struct({ name: Schema.String }))
})
const snapshotOf = (version: PipelineVersion) => Schema.decodeUnknownSync(Snapshot)(version.config)

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

      expect(ok(yield* get(owner, `/api/user/workspaces/${owner.workspace_id}/settings`), "versions.settings")).toEqual(
        {
          workspace_id: owner.workspace_id,
          drafts: false
        }
      )
      expect(ok(yield* get(owner, `${base}/versions`), "versions.list")).toMatchObject({
        live_version: null,
        drafts: false,
        draft_changed: true,
        versions: []
      })

      const published = yield* post(owner, `${base}/publish`, {})
      expect(published.status).toBe(201)
      expect(published.body).toMatchObject({ message: "Pipeline published successfully." })
      const first = created(published, "versions.publish")
      expect(first).toMatchObject({
        number: 1,
        source: "publish",
        rolled_back_from: null,
        is_live: true,
        published_by_user_id: owner.user_id
      })
      expect(snapshotOf(first).pipeline.instructions).toBe(FIVE_DAYS)
      expect(snapshotOf(first).stages.map((s) => s.name)).toEqual(["Open"])

      // the draft changes: a setting, a stage added, a stage changed, a variable
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }), "pipelines.update")
      const later = ok(
        yield* post(owner, `${base}/stages`, { name: "Later", nature: "won", order: 2 }),
        "pipelines.createStage"
      )
      ok(
        yield* put(owner, `/api/user/stages/${open.id}`, { instructions: "Greet the contact." }),
        "pipelines.updateStage"
      )
      ok(
        yield* post(owner, `${base}/variables`, {
          name: "order_number",
          value: "the order number",
          type: "from_ai",
          is_required: false
        }),
        "automation.createVariable"
      )
      const diff = ok(yield* get(owner, `${base}/versions/diff`), "versions.diff")
      expect(diff).toMatchObject({
        from: 1,
        to: "draft",
        settings: [{ field: "instructions", old: FIVE_DAYS, new: TWO_WEEKS }],
        stages: {
          added: [{ id: later.id, name: "Later" }],
          removed: [],
          changed: [{
            id: open.id,
            name: "Open",
            fields: [{ field: "instructions", old: null, new: "Greet the contact." }]
          }]
        },
        variables: { added: [{ name: "order_number" }], removed: [], changed: [] },
        knowledge_tables: { attached: [], detached: [] }
      })
      expect(diff.text).toContain(`~ setting instructions: "${FIVE_DAYS}" -> "${TWO_WEEKS}"`)
      expect(diff.text).toContain(`+ stage "Later" (${later.id})`)
      expect(ok(yield* get(owner, `${base}/versions`), "versions.list").draft_changed).toBe(true)

      const second = created(yield* post(owner, `${base}/publish`, {}), "versions.publish")
      expect(second).toMatchObject({ number: 2, is_live: true })
      expect(ok(yield* get(owner, `${base}/versions/diff?from=2&to=draft`), "versions.diff").text).toBe(
        "No changes from version 2 to draft."
      )
      expect(ok(yield* get(owner, `${base}/versions/diff?from=2&to=1`), "versions.diff").stages.removed).toEqual([{
        id: later.id,
        name: "Later"
      }])

      const rolled = yield* post(owner, `${base}/rollback`, { version: 1 })
      expect(rolled.status).toBe(201)
      const third = created(rolled, "versions.rollback")
      expect(third).toMatchObject({ number: 3, source: "rollback", rolled_back_from: 1, is_live: true })
      expect(snapshotOf(third).pipeline.instructions).toBe(FIVE_DAYS)
      // the answer is the version as stored (published_at, published_by and the snapshot as a read gives them)
      expect(ok(yield* get(owner, `${base}/versions/3`), "versions.get")).toEqual(third)
      const listed = ok(yield* get(owner, `${base}/versions`), "versions.list")
      expect(listed).toMatchObject({ live_version: 3, draft_changed: true })
      expect(listed.versions.map((v) => [v.number, v.source, v.is_live])).toEqual([[3, "rollback", true], [
        2,
        "publish",
        false
      ], [1, "publish", false]])
      // the draft is left as it was: it still has the second version's changes
      expect(ok(yield* get(owner, base), "pipelines.get").instructions).toBe(TWO_WEEKS)
      expect(snapshotOf(ok(yield* get(owner, `${base}/versions/1`), "versions.get")).pipeline.instructions).toBe(
        FIVE_DAYS
      )

      // bad input: 422 naming the field
      expect422(yield* post(owner, `${base}/rollback`, { version: 9 }), ["version"])
      expect422(yield* post(owner, `${base}/rollback`, { version: "one" }), ["version"])
      expect422(yield* get(owner, `${base}/versions/diff?from=7`), ["from"])
      expect422(yield* get(owner, `${base}/versions/diff?to=latest`), ["to"])
      expect422(yield* patch(owner, `/api/user/workspaces/${owner.workspace_id}/settings`, { drafts: "yes" }), [
        "drafts"
      ])
      expectStatus(yield* get(owner, `${base}/versions/9`), 404, "Version not found.")

      // scopes: reading needs pipelines:read, publishing pipelines:write
      const reader = yield* tokenFor(owner.email, ["pipelines:read"])
      expect(ok(yield* get(reader, `${base}/versions`), "versions.list").live_version).toBe(3)
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
      expectStatus(
        yield* get(stranger, `/api/user/workspaces/${owner.workspace_id}/settings`),
        404,
        "Workspace not found."
      )
      expectStatus(yield* patch(stranger, `/api/user/workspaces/${owner.workspace_id}/settings`, { drafts: true }), 404)
      expect(ok(yield* get(owner, `${base}/versions`), "versions.list").versions).toHaveLength(3)
      expect(ok(yield* get(owner, `/api/user/workspaces/${owner.workspace_id}/settings`), "versions.settings").drafts)
        .toBe(false)
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
          return finished(owner, ok(r, "evals.startRun").id)
        })
      created(yield* post(owner, `${base}/publish`, {}), "versions.publish")
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }), "pipelines.update")

      expect(yield* run("published")).toMatchObject({ status: "passed", version: "live", version_number: 1 })
      const byNumber = yield* run(1)
      expect(byNumber).toMatchObject({ status: "passed", version: 1, version_number: 1 })
      const onDraft = yield* run("draft")
      expect(onDraft).toMatchObject({ status: "failed", version: "draft", version_number: null })
      expect(onDraft.results[0]!.verdicts.filter((v) => !v.passed).map((v) => v.expectation)).toEqual([
        "reply_contains"
      ])
      // compared with the newest run of what is live (version 1), not merely the run before
      expect(onDraft.comparison).toMatchObject({
        previous_run_id: byNumber.id,
        previous_passed: 1,
        newly_failing: ["refund time"]
      })
      expect422(yield* post(owner, `${base}/eval-runs`, { cases: [refundCase], version: 4 }), ["version"])

      // gated: the failing draft run refuses the publish; a passing one on the unchanged draft allows it
      expect(
        ok(yield* put(owner, `${base}/publish-gate`, { is_publish_gated: true }), "versions.publishGate")
          .is_publish_gated
      ).toBe(true)
      const gated = yield* post(owner, `${base}/publish`, {})
      expectStatus(
        gated,
        409,
        `The newest eval run of the draft (${onDraft.id}) failed: publishing needs a passing run.`
      )
      ok(
        yield* put(owner, base, { instructions: `${FIVE_DAYS} Refunds go to the card you paid with.` }),
        "pipelines.update"
      )
      const passing = yield* run("draft")
      expect(passing.status).toBe("passed")
      expect(passing.comparison!.previous_run_id).toBe(byNumber.id)
      ok(yield* put(owner, base, { persona: "Calm" }), "pipelines.update")
      expectStatus(
        yield* post(owner, `${base}/publish`, {}),
        409,
        `The draft changed after eval run ${passing.id} passed: run evals on the draft again.`
      )
      ok(yield* put(owner, base, { persona: null }), "pipelines.update")
      // back to what the run played: the draft is unchanged since it passed
      const published = yield* post(owner, `${base}/publish`, {})
      expect(published.status).toBe(201)
      expect(created(published, "versions.publish").number).toBe(2)
      // with drafts off, draft and live are the same tables
      yield* drafts(owner, false)
      ok(yield* put(owner, base, { instructions: TWO_WEEKS }), "pipelines.update")
      expect(yield* run("live")).toMatchObject({ status: "failed", version_number: null })
    }))

  it.scoped("MCP: publish_pipeline publishes and rolls back, list_pipeline_versions and diff_pipeline_versions read; scopes and other workspaces", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const { pipeline } = yield* refundPipeline(owner)
      const mcp = yield* mcpSession(owner.token)
      expect(yield* mcp.ok("publish_pipeline", { pipeline_id: pipeline.id })).toMatchObject({
        number: 1,
        source: "publish",
        is_live: true
      })
      ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { instructions: TWO_WEEKS }), "pipelines.update")
      const diff = yield* mcp.ok("diff_pipeline_versions", { pipeline_id: pipeline.id }, VersionDiff)
      expect(diff).toMatchObject({
        from: 1,
        to: "draft",
        settings: [{ field: "instructions", old: FIVE_DAYS, new: TWO_WEEKS }]
      })
      expect(diff.text).toBe(`version 1 -> draft:\n~ setting instructions: "${FIVE_DAYS}" -> "${TWO_WEEKS}"`)
      expect(yield* mcp.ok("publish_pipeline", { pipeline_id: pipeline.id })).toMatchObject({ number: 2 })
      expect(yield* mcp.ok("publish_pipeline", { pipeline_id: pipeline.id, version: 1 })).toMatchObject({
        number: 3,
        source: "rollback",
        rolled_back_from: 1
      })
      expect(
        (yield* mcp.ok("diff_pipeline_versions", { pipeline_id: pipeline.id, from: "2", to: "live" }, VersionDiff))
          .settings
      )
        .toEqual([
          { field: "instructions", old: TWO_WEEKS, new: FIVE_DAYS }
        ])
      const listed = yield* mcp.ok("list_pipeline_versions", { pipeline_id: pipeline.id }, PipelineVersions)
      expect(listed).toMatchObject({ live_version: 3, draft_changed: true })
      expect(listed.versions.map((v) => v.number)).toEqual([3, 2, 1])
      const bad = yield* mcp.call("publish_pipeline", { pipeline_id: pipeline.id, version: 8 })
      expect(bad.isError).toBe(true)
      expect(textOf(bad)).toContain("version")

      const reader = yield* mcpSession((yield* tokenFor(owner.email, ["mcp:use", "pipelines:read"])).token)
      expect((yield* reader.ok("list_pipeline_versions", { pipeline_id: pipeline.id }, PipelineVersions)).live_version)
        .toBe(3)
      expect(textOf(yield* reader.call("publish_pipeline", { pipeline_id: pipeline.id }))).toBe(
        "Missing required scope: pipelines:write"
      )
      const stranger = yield* mcpSession((yield* seedUser()).token)
      expect(textOf(yield* stranger.call("list_pipeline_versions", { pipeline_id: pipeline.id }))).toBe(
        "Pipeline not found."
      )
      expect(textOf(yield* stranger.call("publish_pipeline", { pipeline_id: pipeline.id }))).toBe("Pipeline not found.")
    }))
})
