import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Identity } from "../src/identity/Identity.js"
import { failure } from "./support/Contract.js"
import { createPipeline, expect422, expectStatus, get, ok, put } from "./support/Opportunities.js"
import { call, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

const pool = (ids: readonly [number, number, number, number] = [10, 11, 12, 20]) => [
  { tier: "router", ai_model_id: ids[0], instructions: "Pick the cheapest tier that can answer." },
  { tier: "simple", ai_model_id: ids[1] },
  { tier: "moderate", ai_model_id: ids[2] },
  { tier: "complex", ai_model_id: ids[3], instructions: "Hard questions." }
]

const stored = (ids: readonly [number, number, number, number] = [10, 11, 12, 20]) => [
  { tier: "router", ai_model_id: ids[0], instructions: "Pick the cheapest tier that can answer." },
  { tier: "simple", ai_model_id: ids[1], instructions: null },
  { tier: "moderate", ai_model_id: ids[2], instructions: null },
  { tier: "complex", ai_model_id: ids[3], instructions: "Hard questions." }
]

const path = (id: number) => `/api/user/pipelines/${id}/model-pool`

layer(TestServerLive())("model pool over REST", (it) => {
  it.effect("a pipeline without a pool answers the four tiers with null models", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, "Plain")
      const r = yield* get(alice, path(p.id))
      expect(r.status).toBe(200)
      expect(r.body).toEqual({
        status: true,
        code: 200,
        validation: [],
        message: "OK",
        data: {
          pipeline_id: p.id,
          is_model_routing_enabled: false,
          tiers: ["router", "simple", "moderate", "complex"].map((tier) => ({
            tier,
            ai_model_id: null,
            instructions: null
          }))
        }
      })
    }))

  it.effect("PUT sets the four tiers in tier order and turns routing on; the pipeline shows the same pool", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, "Smart")
      const shuffled = [pool()[3], pool()[1], pool()[0], pool()[2]]
      const r = yield* put(alice, path(p.id), { is_model_routing_enabled: true, tiers: shuffled })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        status: true,
        code: 200,
        validation: [],
        message: "Model pool updated successfully."
      })
      const data = ok(r, "modelPool.update")
      expect(data).toEqual({ pipeline_id: p.id, is_model_routing_enabled: true, tiers: stored() })
      expect(ok(yield* get(alice, path(p.id)), "modelPool.get")).toEqual(data)
      const pipeline = ok(yield* get(alice, `/api/user/pipelines/${p.id}`), "pipelines.get")
      expect(pipeline.is_model_routing_enabled).toBe(true)
      expect(pipeline.is_model_routing).toEqual(stored())
    }))

  it.effect("is_model_routing_enabled is unchanged when omitted and can be turned off with the tiers", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, "Toggle")
      const withoutFlag = ok(yield* put(alice, path(p.id), { tiers: pool() }), "modelPool.update")
      expect(withoutFlag.is_model_routing_enabled).toBe(false)
      expect(withoutFlag.tiers).toEqual(stored())
      ok(yield* put(alice, path(p.id), { is_model_routing_enabled: true, tiers: pool() }), "modelPool.update")
      const replaced = ok(yield* put(alice, path(p.id), { tiers: pool([1, 2, 3, 21]) }), "modelPool.update")
      expect(replaced.is_model_routing_enabled).toBe(true)
      expect(replaced.tiers.map((t) => t.ai_model_id)).toEqual([1, 2, 3, 21])
      const off = ok(
        yield* put(alice, path(p.id), { is_model_routing_enabled: false, tiers: pool() }),
        "modelPool.update"
      )
      expect(off.is_model_routing_enabled).toBe(false)
      expect(off.tiers).toEqual(stored())
    }))

  it.effect("a pool set through PUT pipeline is read back here", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, "Via pipeline")
      ok(
        yield* put(alice, `/api/user/pipelines/${p.id}`, {
          is_model_routing_enabled: true,
          is_model_routing: pool([13, 13, 14, 22])
        }),
        "pipelines.update"
      )
      const r = ok(yield* get(alice, path(p.id)), "modelPool.get")
      expect(r.is_model_routing_enabled).toBe(true)
      expect(r.tiers.map((t) => [t.tier, t.ai_model_id])).toEqual([["router", 13], ["simple", 13], [
        "moderate",
        14
      ], ["complex", 22]])
    }))

  it.effect("three tiers, a tier named twice, a bad tier and a missing tiers field are 422 on the entry at fault", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, "Invalid")
      const three = yield* put(alice, path(p.id), { tiers: pool().slice(0, 3) })
      expect422(three, ["tiers"])
      expect(failure(three).validation[0]!.message).toContain("exactly 4 entries")
      const twice = pool()
      twice[3] = { ...twice[3]!, tier: "simple" }
      const dup = yield* put(alice, path(p.id), { tiers: twice })
      expect422(dup, ["tiers"])
      expect(failure(dup).validation[0]!.message).toContain("exactly once")
      const badTier = pool()
      badTier[1] = { ...badTier[1]!, tier: "trivial" }
      const bad = yield* put(alice, path(p.id), { tiers: badTier })
      expect422(bad, ["tiers.1.tier"])
      expect(failure(bad).validation[0]!.message).toBe(
        "The tiers.1.tier field must be one of \"router\", \"simple\", \"moderate\" or \"complex\"."
      )
      const missing = yield* put(alice, path(p.id), { is_model_routing_enabled: true })
      expect422(missing, ["tiers"])
      expect(failure(missing).validation[0]!.message).toBe("The tiers field is required.")
      expect422(yield* put(alice, path(p.id), { is_model_routing_enabled: "yes", tiers: [] }), [
        "is_model_routing_enabled",
        "tiers"
      ])
      const noModel = pool() as Array<Record<string, unknown>>
      noModel[0] = { tier: "router" }
      expect422(yield* put(alice, path(p.id), { tiers: noModel }), ["tiers.0.ai_model_id"])
      expect(ok(yield* get(alice, path(p.id)), "modelPool.get").tiers[0]!.ai_model_id).toBeNull()
    }))

  it.effect("unknown models are 422 naming each entry, and nothing changes", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, "Unknown model")
      ok(yield* put(alice, path(p.id), { tiers: pool() }), "modelPool.update")
      const r = yield* put(alice, path(p.id), { is_model_routing_enabled: true, tiers: pool([999, 11, 998, 20]) })
      expect422(r, ["tiers.0.ai_model_id", "tiers.2.ai_model_id"])
      expect(failure(r).validation[0]).toEqual({
        field: "tiers.0.ai_model_id",
        message: "The selected AI model does not exist."
      })
      expect(failure(r).message).toBe("The selected AI model does not exist. (and 1 more error)")
      expect(ok(yield* get(alice, path(p.id)), "modelPool.get")).toMatchObject({
        is_model_routing_enabled: false,
        tiers: stored()
      })
    }))

  it.effect("another workspace's pipeline answers 404 exactly like a missing one, on GET and PUT, and is left alone", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const bobs = yield* createPipeline(bob, "Bob's")
      const notFound = { status: false, code: 404, validation: [], message: "Pipeline not found.", data: null }
      for (
        const r of [
          yield* get(alice, path(bobs.id)),
          yield* put(alice, path(bobs.id), { is_model_routing_enabled: true, tiers: pool() }),
          yield* get(alice, path(987654321)),
          yield* put(alice, path(987654321), { tiers: pool() })
        ]
      ) {
        expect(r.status).toBe(404)
        expect(r.body).toEqual(notFound)
      }
      expect(ok(yield* get(bob, path(bobs.id)), "modelPool.get")).toMatchObject({
        is_model_routing_enabled: false,
        tiers: [{ ai_model_id: null }, {}, {}, {}]
      })
    }))

  it.effect("a pipeline managed through another workspace is reachable", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const manager = yield* seedUser()
      const p = yield* createPipeline(owner, "Managed")
      yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, owner.workspace_id))
      expect(ok(yield* put(manager, path(p.id), { tiers: pool() }), "modelPool.update").tiers).toEqual(stored())
      expect(ok(yield* get(owner, path(p.id)), "modelPool.get").tiers).toEqual(stored())
    }))

  it.effect("a non-numeric pipeline id is 422 on pipeline", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      expect422(yield* get(alice, "/api/user/pipelines/abc/model-pool"), ["pipeline"])
    }))

  it.effect("401 without a token; GET needs pipelines:read and PUT pipelines:write", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, "Scoped")
      expectStatus(yield* call(path(p.id)), 401)
      expectStatus(yield* call(path(p.id), { method: "PUT", body: { tiers: pool() } }), 401)
      const reader = { token: (yield* tokenFor(alice.email, ["pipelines:read"])).token }
      const writer = { token: (yield* tokenFor(alice.email, ["pipelines:write"])).token }
      expect(ok(yield* get(reader, path(p.id)), "modelPool.get").pipeline_id).toBe(p.id)
      expectStatus(yield* put(reader, path(p.id), { tiers: pool() }), 403, "Missing required scope: pipelines:write")
      expectStatus(yield* get(writer, path(p.id)), 403, "Missing required scope: pipelines:read")
      expect(ok(yield* put(writer, path(p.id), { tiers: pool() }), "modelPool.update").tiers).toEqual(stored())
    }))
})
