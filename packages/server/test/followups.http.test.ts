/**
 * A stage's followup over REST (SPEC.md 4.5 `create_followup`, `get_stage_followup`, `update_followup`):
 * `GET/PUT/DELETE /api/user/stages/{id}/followup`, scoped like stages.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { failure } from "./support/Contract.js"
import {
  createPipeline,
  createStage,
  del,
  expect422,
  expectStatus,
  get,
  ok,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

const path = (stageId: number) => `/api/user/stages/${stageId}/followup`

/** A pipeline with a nurture stage (for the followup) and a stage to move to after it. */
const setup = Effect.gen(function*() {
  const owner = yield* seedUser()
  const pipeline = yield* createPipeline(owner, "Sales")
  const nurture = yield* createStage(owner, pipeline.id, "Nurture", 1)
  const closed = yield* createStage(owner, pipeline.id, "No response", 2, "lost")
  return { owner, pipeline, nurture, closed }
})

const intervals = [{ interval_value: 1, interval_unit: "day" }, { interval_value: 2, interval_unit: "week" }]

layer(TestServerLive())("followups over REST", (it) => {
  it.effect("a stage without a followup says so", () =>
    Effect.gen(function*() {
      const { nurture, owner } = yield* setup
      const r = yield* get(owner, path(nurture.id))
      expect(r.body).toMatchObject({ status: true, code: 200, validation: [] })
      expect(ok(r, "followups.get")).toEqual({ has_followup: false, followup: null })
    }))

  it.effect("PUT creates a draft followup, GET returns it, a second PUT changes only the fields sent", () =>
    Effect.gen(function*() {
      const { closed, nurture, owner, pipeline } = yield* setup
      const created = yield* put(owner, path(nurture.id), {
        is_active: false,
        intervals,
        instructions: "Ask whether they would like a demo.",
        assets: "https://example.com/brochure.pdf",
        after_followup_stage_id: closed.id
      })
      expect(created.body).toMatchObject({ message: "Followup saved successfully." })
      const data = ok(created, "followups.save")
      expect(data.has_followup).toBe(true)
      expect(data.followup).toMatchObject({
        stage_id: nurture.id,
        pipeline_id: pipeline.id,
        is_active: false,
        intervals,
        instructions: "Ask whether they would like a demo.",
        assets: "https://example.com/brochure.pdf",
        after_followup_stage_id: closed.id,
        max_messages: 2
      })
      expect(data.followup!.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
      expect(ok(yield* get(owner, path(nurture.id)), "followups.get")).toEqual(data)

      const activated = ok(
        yield* put(owner, path(nurture.id), { is_active: true, instructions: null }),
        "followups.save"
      )
      expect(activated.followup).toMatchObject({
        id: data.followup!.id,
        is_active: true,
        intervals,
        instructions: null,
        assets: "https://example.com/brochure.pdf",
        after_followup_stage_id: closed.id
      })
      // still one followup per stage
      const rows = yield* sqlRows<
        { n: number }
      >`select count(*)::int as n from followups where stage_id = ${nurture.id}`
      expect(rows[0]!.n).toBe(1)
    }))

  it.effect("max_messages is the smaller of the intervals and the pipeline's followup_limit", () =>
    Effect.gen(function*() {
      const { nurture, owner, pipeline } = yield* setup
      const many = Array.from({ length: 10 }, () => ({ interval_value: 1, interval_unit: "hour" }))
      expect(
        ok(yield* put(owner, path(nurture.id), { is_active: true, intervals: many }), "followups.save").followup!
          .max_messages
      ).toBe(6)
      ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { followup_limit: 3 }), "pipelines.update")
      expect(ok(yield* get(owner, path(nurture.id)), "followups.get").followup!.max_messages).toBe(3)
      expect(
        ok(yield* put(owner, path(nurture.id), { intervals: intervals.slice(0, 1) }), "followups.save").followup!
          .max_messages
      ).toBe(1)
    }))

  it.effect("creating needs is_active and intervals: 422 naming both", () =>
    Effect.gen(function*() {
      const { nurture, owner } = yield* setup
      expect422(yield* put(owner, path(nurture.id), { instructions: "Nudge them." }), ["intervals", "is_active"])
      expect(ok(yield* get(owner, path(nurture.id)), "followups.get").has_followup).toBe(false)
    }))

  it.effect("bad intervals give 422 naming each bad entry's field", () =>
    Effect.gen(function*() {
      const { nurture, owner } = yield* setup
      const r = yield* put(owner, path(nurture.id), {
        is_active: "yes",
        intervals: [
          { interval_value: 1, interval_unit: "minute" },
          { interval_value: 5, interval_unit: "year" },
          { interval_value: 1, interval_unit: "hour" },
          { interval_value: 0, interval_unit: "day" },
          { interval_value: 101, interval_unit: "week" },
          { interval_unit: "month" }
        ]
      })
      expect422(r, [
        "intervals.1.interval_unit",
        "intervals.3.interval_value",
        "intervals.4.interval_value",
        "intervals.5.interval_value",
        "is_active"
      ])
      expect(failure(r).validation.find((v) => v.field === "intervals.3.interval_value")!.message)
        .toBe("The intervals.3.interval_value field must be an integer between 1 and 100.")
      expect422(yield* put(owner, path(nurture.id), { is_active: true, intervals: [] }), ["intervals"])
      const tooMany = Array.from({ length: 101 }, () => ({ interval_value: 1, interval_unit: "day" }))
      expect422(yield* put(owner, path(nurture.id), { is_active: true, intervals: tooMany }), ["intervals"])
      const hundred = tooMany.slice(0, 100)
      expect(
        ok(yield* put(owner, path(nurture.id), { is_active: true, intervals: hundred }), "followups.save").followup!
          .intervals
      ).toHaveLength(100)
    }))

  it.effect("after_followup_stage_id must be another stage of the same pipeline: 422 otherwise, nothing saved", () =>
    Effect.gen(function*() {
      const { nurture, owner } = yield* setup
      const other = yield* createPipeline(owner, "Support")
      const elsewhere = yield* createStage(owner, other.id, "Elsewhere", 1)
      for (const after of [elsewhere.id, nurture.id, 999_999]) {
        expect422(yield* put(owner, path(nurture.id), { is_active: true, intervals, after_followup_stage_id: after }), [
          "after_followup_stage_id"
        ])
      }
      // a bad interval and a bad stage: both named at once
      expect422(
        yield* put(owner, path(nurture.id), {
          is_active: true,
          intervals: [{ interval_value: 0, interval_unit: "day" }],
          after_followup_stage_id: "x"
        }),
        ["after_followup_stage_id", "intervals.0.interval_value"]
      )
      expect(ok(yield* get(owner, path(nurture.id)), "followups.get").has_followup).toBe(false)
    }))

  it.effect("another workspace's stage is 404 for GET, PUT and DELETE, and stays untouched", () =>
    Effect.gen(function*() {
      const { nurture, owner } = yield* setup
      ok(yield* put(owner, path(nurture.id), { is_active: true, intervals }), "followups.save")
      const stranger = yield* seedUser()
      expectStatus(yield* get(stranger, path(nurture.id)), 404, "Stage not found.")
      expectStatus(yield* put(stranger, path(nurture.id), { is_active: false, intervals }), 404, "Stage not found.")
      expectStatus(yield* del(stranger, path(nurture.id)), 404, "Stage not found.")
      expectStatus(yield* get(owner, path(999_999)), 404, "Stage not found.")
      expect(ok(yield* get(owner, path(nurture.id)), "followups.get").followup!.is_active).toBe(true)
    }))

  it.effect("DELETE removes the followup; a second DELETE is 404", () =>
    Effect.gen(function*() {
      const { nurture, owner } = yield* setup
      ok(yield* put(owner, path(nurture.id), { is_active: true, intervals }), "followups.save")
      const r = yield* del(owner, path(nurture.id))
      expect(r.body).toMatchObject({ message: "Followup deleted successfully." })
      expect(ok(r, "followups.delete")).toEqual({ stage_id: nurture.id, deleted: true })
      expect(ok(yield* get(owner, path(nurture.id)), "followups.get")).toEqual({ has_followup: false, followup: null })
      expectStatus(yield* del(owner, path(nurture.id)), 404, "This stage has no followup.")
    }))

  it.effect("reading needs pipelines:read and writing pipelines:write", () =>
    Effect.gen(function*() {
      const { nurture, owner } = yield* setup
      ok(yield* put(owner, path(nurture.id), { is_active: true, intervals }), "followups.save")
      const reader = { token: (yield* tokenFor(owner.email, ["pipelines:read"])).token }
      expect(ok(yield* get(reader, path(nurture.id)), "followups.get").has_followup).toBe(true)
      expectStatus(
        yield* put(reader, path(nurture.id), { is_active: false }),
        403,
        "Missing required scope: pipelines:write"
      )
      expectStatus(yield* del(reader, path(nurture.id)), 403, "Missing required scope: pipelines:write")
      const writer = { token: (yield* tokenFor(owner.email, ["pipelines:write"])).token }
      expectStatus(yield* get(writer, path(nurture.id)), 403, "Missing required scope: pipelines:read")
    }))
})
