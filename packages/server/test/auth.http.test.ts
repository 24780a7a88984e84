import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Identity } from "../src/identity/Identity.js"
import { failure, ok } from "./support/Contract.js"
import { call, seedUser, TestServer, TestServerLive, tokenFor } from "./support/TestServer.js"

const validPipeline = (name: string) => ({ name, agent_type_id: 1, ai_model_id: 1, language_id: 1 })

const errorEnvelope = (code: number) => ({ status: false, code, validation: [], data: null })

/** A user with one pipeline (and one stage in it), for tests that reach it from elsewhere. */
const seedPipeline = (name = "Owned") =>
  Effect.gen(function*() {
    const owner = yield* seedUser()
    const created = yield* call("/api/user/pipelines", {
      method: "POST",
      token: owner.token,
      body: validPipeline(name)
    })
    expect(created.status).toBe(200)
    const pipelineId = ok(created, "pipelines.create").id
    const stage = yield* call(`/api/user/pipelines/${pipelineId}/stages`, {
      method: "POST",
      token: owner.token,
      body: { name: "Greeting", nature: "neutral", order: 1 }
    })
    expect(stage.status).toBe(200)
    return { owner, pipelineId, stageId: ok(stage, "pipelines.createStage").id }
  })

layer(TestServerLive())("authentication, scopes and tenancy over REST", (it) => {
  describe("401 for a bad or absent token", () => {
    it.effect("answers 401 with the error envelope when the Authorization header is missing", () =>
      Effect.gen(function*() {
        const r = yield* call("/api/user/pipelines")
        expect(r.status).toBe(401)
        expect(r.body).toMatchObject(errorEnvelope(401))
        expect(typeof failure(r).message).toBe("string")
        expect(failure(r).message.length).toBeGreaterThan(0)
      }))

    it.effect("answers 401 for a token that does not exist", () =>
      Effect.gen(function*() {
        const r = yield* call("/api/user/pipelines", { token: "pat_doesnotexist0000000000000000000000000000000" })
        expect(r.status).toBe(401)
        expect(r.body).toMatchObject(errorEnvelope(401))
      }))

    it.effect("answers 401 for a non-bearer Authorization scheme", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const r = yield* call("/api/user/me", {
          headers: { authorization: `Basic ${Buffer.from(`x:${alice.token}`).toString("base64")}` }
        })
        expect(r.status).toBe(401)
        expect(r.body).toMatchObject(errorEnvelope(401))
      }))

    it.effect("accepts a token before its expiry and answers 401 once expires_at has passed", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        // expires two seconds from now; the first call also puts it in the auth cache
        const token = yield* tokenFor(alice.email, ["pipelines:read"], 2 / 86_400)
        const before = yield* call("/api/user/pipelines", { token: token.token })
        expect(before.status).toBe(200)
        // a wall-clock wait: it.effect's TestClock would never let Effect.sleep end
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2_100)))
        const after = yield* call("/api/user/pipelines", { token: token.token })
        expect(after.status).toBe(401)
        expect(after.body).toMatchObject(errorEnvelope(401))
      }))

    it.effect("answers 401 for a token created with a tiny expiry once it lapses", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        // 1e-7 days is under 9 ms
        const token = yield* tokenFor(alice.email, ["pipelines:read"], 1e-7)
        // a wall-clock wait: it.effect's TestClock would never let Effect.sleep end
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
        const r = yield* call("/api/user/pipelines", { token: token.token })
        expect(r.status).toBe(401)
        expect(r.body).toMatchObject(errorEnvelope(401))
      }))

    it.effect("answers 401 for a revoked token that worked before", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const before = yield* call("/api/user/pipelines", { token: alice.token })
        expect(before.status).toBe(200)
        yield* Effect.flatMap(Identity, (identity) => identity.revokeToken(alice.tokenId))
        const after = yield* call("/api/user/pipelines", { token: alice.token })
        expect(after.status).toBe(401)
        expect(after.body).toMatchObject(errorEnvelope(401))
      }))
  })

  describe("scopes", () => {
    it.effect("answers 403 `Missing required scope: pipelines:read` for a token without it", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser({ scopes: ["channels:read"] })
        const r = yield* call("/api/user/pipelines", { token: alice.token })
        expect(r.status).toBe(403)
        expect(r.body).toEqual({ ...errorEnvelope(403), message: "Missing required scope: pipelines:read" })
      }))

    it.effect("a read-only token lists pipelines but cannot create or update one", () =>
      Effect.gen(function*() {
        const { owner, pipelineId } = yield* seedPipeline()
        const reader = yield* tokenFor(owner.email, ["pipelines:read"])
        const list = yield* call("/api/user/pipelines", { token: reader.token })
        expect(list.status).toBe(200)
        expect(ok(list, "pipelines.list").map((p) => p.id)).toEqual([pipelineId])
        const get = yield* call(`/api/user/pipelines/${pipelineId}`, { token: reader.token })
        expect(get.status).toBe(200)
        const create = yield* call("/api/user/pipelines", {
          method: "POST",
          token: reader.token,
          body: validPipeline("Nope")
        })
        expect(create.status).toBe(403)
        expect(failure(create).message).toBe("Missing required scope: pipelines:write")
        const update = yield* call(`/api/user/pipelines/${pipelineId}`, {
          method: "PUT",
          token: reader.token,
          body: { name: "Renamed" }
        })
        expect(update.status).toBe(403)
        expect(failure(update).message).toBe("Missing required scope: pipelines:write")
        const stage = yield* call(`/api/user/pipelines/${pipelineId}/stages`, {
          method: "POST",
          token: reader.token,
          body: { name: "Intro", nature: "neutral", order: 1 }
        })
        expect(stage.status).toBe(403)
        const unchanged = yield* call(`/api/user/pipelines/${pipelineId}`, { token: reader.token })
        expect(ok(unchanged, "pipelines.get").name).toBe("Owned")
        expect(ok(unchanged, "pipelines.get").stages).toHaveLength(1)
      }))

    it.effect("a write-only token creates a pipeline but cannot read pipelines", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser({ scopes: ["pipelines:write"] })
        const create = yield* call("/api/user/pipelines", {
          method: "POST",
          token: alice.token,
          body: validPipeline("Writer")
        })
        expect(create.status).toBe(200)
        const list = yield* call("/api/user/pipelines", { token: alice.token })
        expect(list.status).toBe(403)
        expect(list.body).toEqual({ ...errorEnvelope(403), message: "Missing required scope: pipelines:read" })
        const created = ok(create, "pipelines.create")
        const get = yield* call(`/api/user/pipelines/${created.id}`, { token: alice.token })
        expect(get.status).toBe(403)
        const stages = yield* call(`/api/user/pipelines/${created.id}/stages`, { token: alice.token })
        expect(stages.status).toBe(403)
      }))

    it.effect("checks the token before the scope: a bad token without scope is 401, not 403", () =>
      Effect.gen(function*() {
        const r = yield* call("/api/user/pipelines", { method: "POST", token: "pat_nope", body: validPipeline("X") })
        expect(r.status).toBe(401)
      }))

    it.effect("GET /api/user/me works with any valid token and reports its scopes", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser({ scopes: ["channels:read"] })
        const r = yield* call("/api/user/me", { token: alice.token })
        expect(r.status).toBe(200)
        expect(r.body).toMatchObject({
          status: true,
          code: 200,
          validation: [],
          data: {
            user: { id: alice.user_id, email: alice.email, is_super_user: false },
            acting_as: null,
            token: { id: alice.tokenId, scopes: ["channels:read"], expires_at: null },
            workspaces: [{ id: alice.workspace_id, role: "owner" }]
          }
        })
      }))
  })

  describe("workspace isolation", () => {
    it.effect("another workspace's pipeline answers GET with the same 404 as a missing one", () =>
      Effect.gen(function*() {
        const { pipelineId } = yield* seedPipeline()
        const mallory = yield* seedUser()
        const foreign = yield* call(`/api/user/pipelines/${pipelineId}`, { token: mallory.token })
        const missing = yield* call("/api/user/pipelines/987654321", { token: mallory.token })
        expect(foreign.status).toBe(404)
        expect(foreign.body).toEqual({ ...errorEnvelope(404), message: "Pipeline not found." })
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual(foreign.body)
      }))

    it.effect("another workspace's pipeline cannot be updated and stays unchanged", () =>
      Effect.gen(function*() {
        const { owner, pipelineId } = yield* seedPipeline()
        const mallory = yield* seedUser()
        const r = yield* call(`/api/user/pipelines/${pipelineId}`, {
          method: "PUT",
          token: mallory.token,
          body: { name: "Pwned" }
        })
        expect(r.status).toBe(404)
        expect(r.body).toEqual({ ...errorEnvelope(404), message: "Pipeline not found." })
        const got = yield* call(`/api/user/pipelines/${pipelineId}`, { token: owner.token })
        expect(ok(got, "pipelines.get").name).toBe("Owned")
      }))

    it.effect("another workspace's pipeline stages cannot be listed or created", () =>
      Effect.gen(function*() {
        const { owner, pipelineId } = yield* seedPipeline()
        const mallory = yield* seedUser()
        const list = yield* call(`/api/user/pipelines/${pipelineId}/stages`, { token: mallory.token })
        expect(list.status).toBe(404)
        expect(list.body).toEqual({ ...errorEnvelope(404), message: "Pipeline not found." })
        const create = yield* call(`/api/user/pipelines/${pipelineId}/stages`, {
          method: "POST",
          token: mallory.token,
          body: { name: "Injected", nature: "neutral", order: 1 }
        })
        expect(create.status).toBe(404)
        expect(create.body).toEqual({ ...errorEnvelope(404), message: "Pipeline not found." })
        const stages = yield* call(`/api/user/pipelines/${pipelineId}/stages`, { token: owner.token })
        expect(ok(stages, "pipelines.listStages").map((s) => s.name)).toEqual(["Greeting"])
      }))

    it.effect("another workspace's stage cannot be updated or deleted (404 like a missing one)", () =>
      Effect.gen(function*() {
        const { owner, pipelineId, stageId } = yield* seedPipeline()
        const mallory = yield* seedUser()
        const update = yield* call(`/api/user/stages/${stageId}`, {
          method: "PUT",
          token: mallory.token,
          body: { name: "Pwned" }
        })
        expect(update.status).toBe(404)
        expect(update.body).toEqual({ ...errorEnvelope(404), message: "Stage not found." })
        const del = yield* call(`/api/user/stages/${stageId}`, { method: "DELETE", token: mallory.token })
        expect(del.status).toBe(404)
        const missing = yield* call("/api/user/stages/987654321", { method: "DELETE", token: mallory.token })
        expect(missing.body).toEqual(del.body)
        const stages = yield* call(`/api/user/pipelines/${pipelineId}/stages`, { token: owner.token })
        expect(ok(stages, "pipelines.listStages").map((s) => s.name)).toEqual(["Greeting"])
      }))

    it.effect("lists only the caller's own pipelines", () =>
      Effect.gen(function*() {
        const { pipelineId } = yield* seedPipeline()
        const mallory = yield* seedUser()
        yield* call("/api/user/pipelines", { method: "POST", token: mallory.token, body: validPipeline("Mine") })
        const list = yield* call("/api/user/pipelines", { token: mallory.token })
        expect(ok(list, "pipelines.list").map((p) => p.name)).toEqual(["Mine"])
        expect(ok(list, "pipelines.list").map((p) => p.id)).not.toContain(pipelineId)
      }))

    it.effect("creating a pipeline in a workspace the caller is not a member of answers 422 on workspace_id", () =>
      Effect.gen(function*() {
        const { owner } = yield* seedPipeline()
        const mallory = yield* seedUser()
        const r = yield* call("/api/user/pipelines", {
          method: "POST",
          token: mallory.token,
          body: { ...validPipeline("Sneaky"), workspace_id: owner.workspace_id }
        })
        expect(r.status).toBe(422)
        expect(failure(r).validation.map((v) => v.field)).toEqual(["workspace_id"])
        const list = yield* call("/api/user/pipelines", { token: owner.token })
        expect(ok(list, "pipelines.list").map((p) => p.name)).toEqual(["Owned"])
      }))
  })

  describe("managers", () => {
    it.effect("a manager reaches, lists and updates the managed workspace's pipeline", () =>
      Effect.gen(function*() {
        const { owner, pipelineId } = yield* seedPipeline()
        const manager = yield* seedUser()
        const before = yield* call(`/api/user/pipelines/${pipelineId}`, { token: manager.token })
        expect(before.status).toBe(404)
        yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, owner.workspace_id))
        const got = yield* call(`/api/user/pipelines/${pipelineId}`, { token: manager.token })
        expect(got.status).toBe(200)
        expect(ok(got, "pipelines.get").workspace_id).toBe(owner.workspace_id)
        const list = yield* call("/api/user/pipelines", { token: manager.token })
        expect(ok(list, "pipelines.list").map((p) => p.id)).toContain(pipelineId)
        const stages = yield* call(`/api/user/pipelines/${pipelineId}/stages`, { token: manager.token })
        expect(stages.status).toBe(200)
        const update = yield* call(`/api/user/pipelines/${pipelineId}`, {
          method: "PUT",
          token: manager.token,
          body: { description: "Managed" }
        })
        expect(update.status).toBe(200)
        expect(ok(update, "pipelines.update").description).toBe("Managed")
      }))

    it.effect("a manager's new pipelines go to their own workspace unless workspace_id names the managed one", () =>
      Effect.gen(function*() {
        const { owner } = yield* seedPipeline()
        const manager = yield* seedUser()
        yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, owner.workspace_id))
        const own = yield* call("/api/user/pipelines", {
          method: "POST",
          token: manager.token,
          body: validPipeline("Own")
        })
        expect(ok(own, "pipelines.create").workspace_id).toBe(manager.workspace_id)
        const managed = yield* call("/api/user/pipelines", {
          method: "POST",
          token: manager.token,
          body: { ...validPipeline("For owner"), workspace_id: owner.workspace_id }
        })
        expect(managed.status).toBe(200)
        expect(ok(managed, "pipelines.create").workspace_id).toBe(owner.workspace_id)
        const ownerList = yield* call("/api/user/pipelines", { token: owner.token })
        expect(ok(ownerList, "pipelines.list").map((p) => p.name).sort()).toEqual(["For owner", "Owned"])
      }))

    it.effect("GET /api/user/me lists the owned workspace first, then the managed one", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const manager = yield* seedUser()
        yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, owner.workspace_id))
        const me = yield* call("/api/user/me", { token: manager.token })
        expect(ok(me, "account.me").workspaces.map((w) => [w.id, w.role])).toEqual([
          [manager.workspace_id, "owner"],
          [owner.workspace_id, "manager"]
        ])
      }))
  })

  describe("super-user impersonation", () => {
    it.effect("a super user with X-Act-As-User sees the other user's pipelines and /me shows acting_as", () =>
      Effect.gen(function*() {
        const { owner, pipelineId } = yield* seedPipeline("Alice's")
        const admin = yield* seedUser()
        yield* Effect.flatMap(Identity, (identity) => identity.makeSuper(admin.email))
        const own = yield* call("/api/user/pipelines", { token: admin.token })
        expect(ok(own, "pipelines.list")).toEqual([])
        const headers = { "x-act-as-user": String(owner.user_id) }
        const acting = yield* call("/api/user/pipelines", { token: admin.token, headers })
        expect(acting.status).toBe(200)
        expect(ok(acting, "pipelines.list").map((p) => p.id)).toEqual([pipelineId])
        const got = yield* call(`/api/user/pipelines/${pipelineId}`, { token: admin.token, headers })
        expect(got.status).toBe(200)
        const me = yield* call("/api/user/me", { token: admin.token, headers })
        expect(me.status).toBe(200)
        const acted = ok(me, "account.me")
        expect(acted.user).toMatchObject({ id: admin.user_id, is_super_user: true })
        expect(acted.acting_as).toBe(owner.user_id)
        expect(acted.workspaces.map((w) => w.id)).toEqual([owner.workspace_id])
      }))

    it.effect("a pipeline created while acting as another user lands in that user's workspace", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const admin = yield* seedUser()
        yield* Effect.flatMap(Identity, (identity) => identity.makeSuper(admin.email))
        const r = yield* call("/api/user/pipelines", {
          method: "POST",
          token: admin.token,
          headers: { "x-act-as-user": String(owner.user_id) },
          body: validPipeline("On behalf")
        })
        expect(r.status).toBe(200)
        expect(ok(r, "pipelines.create").workspace_id).toBe(owner.workspace_id)
      }))

    it.effect("a non-super user sending X-Act-As-User gets 403 and sees nothing of the target", () =>
      Effect.gen(function*() {
        const { owner } = yield* seedPipeline()
        const mallory = yield* seedUser()
        const r = yield* call("/api/user/pipelines", {
          token: mallory.token,
          headers: { "x-act-as-user": String(owner.user_id) }
        })
        expect(r.status).toBe(403)
        expect(r.body).toMatchObject(errorEnvelope(403))
        const me = yield* call("/api/user/me", {
          token: mallory.token,
          headers: { "x-act-as-user": String(owner.user_id) }
        })
        expect(me.status).toBe(403)
      }))

    it.effect("a super user acting as an unknown user gets 403", () =>
      Effect.gen(function*() {
        const admin = yield* seedUser()
        yield* Effect.flatMap(Identity, (identity) => identity.makeSuper(admin.email))
        for (const target of ["987654321", "not-a-number"]) {
          const r = yield* call("/api/user/pipelines", { token: admin.token, headers: { "x-act-as-user": target } })
          expect(r.status).toBe(403)
          expect(r.body).toMatchObject(errorEnvelope(403))
        }
      }))

    it.effect("impersonation keeps the super user's token scopes", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const admin = yield* seedUser({ scopes: ["channels:read"] })
        yield* Effect.flatMap(Identity, (identity) => identity.makeSuper(admin.email))
        const r = yield* call("/api/user/pipelines", {
          token: admin.token,
          headers: { "x-act-as-user": String(owner.user_id) }
        })
        expect(r.status).toBe(403)
        expect(failure(r).message).toBe("Missing required scope: pipelines:read")
      }))
  })

  describe("malformed requests and unknown routes", () => {
    it.effect("a malformed JSON body answers 400 with the error envelope", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const r = yield* call("/api/user/pipelines", {
          method: "POST",
          token: alice.token,
          headers: { "content-type": "application/json" },
          rawBody: "{\"name\": \"Broken\","
        })
        expect(r.status).toBe(400)
        expect(r.body).toMatchObject(errorEnvelope(400))
        expect(failure(r).message).toMatch(/JSON/)
        const list = yield* call("/api/user/pipelines", { token: alice.token })
        expect(ok(list, "pipelines.list")).toEqual([])
      }))

    it.effect("a malformed JSON body on an update answers 400 and changes nothing", () =>
      Effect.gen(function*() {
        const { owner, pipelineId } = yield* seedPipeline()
        const r = yield* call(`/api/user/pipelines/${pipelineId}`, {
          method: "PUT",
          token: owner.token,
          headers: { "content-type": "application/json" },
          rawBody: "not json at all"
        })
        expect(r.status).toBe(400)
        expect(r.body).toMatchObject(errorEnvelope(400))
      }))

    it.effect("a non-numeric path id answers 422 naming the path parameter", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const r = yield* call("/api/user/pipelines/abc", { token: alice.token })
        expect(r.status).toBe(422)
        expect(r.body).toMatchObject({ status: false, code: 422, data: null })
        expect(failure(r).validation.map((v) => v.field)).toEqual(["pipeline"])
      }))

    it.effect("unknown routes answer 404 with the error envelope", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        for (const path of ["/api/user/nope", "/nothing"]) {
          const anonymous = yield* call(path)
          expect(anonymous.status).toBe(404)
          expect(anonymous.body).toEqual({ ...errorEnvelope(404), message: "Not found." })
          const authed = yield* call(path, { token: alice.token, method: "POST", body: {} })
          expect(authed.status).toBe(404)
          expect(authed.body).toEqual({ ...errorEnvelope(404), message: "Not found." })
        }
      }))
  })

  describe("health", () => {
    it.effect("/health and /ready answer 200 on the API listener without a token", () =>
      Effect.gen(function*() {
        const health = yield* call("/health")
        expect(health.status).toBe(200)
        expect(health.body).toEqual({ status: "ok" })
        const ready = yield* call("/ready")
        expect(ready.status).toBe(200)
        expect(ready.body).toEqual({ status: "ready" })
      }))

    it.effect("/health and /ready also answer 200 on the receiver listener", () =>
      Effect.gen(function*() {
        const { receiverUrl } = yield* TestServer
        const get = (path: string) =>
          Effect.promise(async () => {
            const r = await fetch(receiverUrl + path)
            const body: unknown = await r.json()
            return { status: r.status, body }
          })
        expect(yield* get("/health")).toEqual({ status: 200, body: { status: "ok" } })
        expect(yield* get("/ready")).toEqual({ status: 200, body: { status: "ready" } })
      }))
  })
})

layer(TestServerLive())("listeners", (it) => {
  it.effect("the receiver listener does not serve the REST API", () =>
    Effect.gen(function*() {
      const { receiverUrl } = yield* TestServer
      const response = yield* Effect.promise(() => fetch(`${receiverUrl}/api/user/pipelines`))
      expect(response.status).toBe(404)
      expect(yield* Effect.promise(() => response.json())).toEqual({
        status: false,
        code: 404,
        validation: [],
        message: "Not found.",
        data: null
      })
    }))
})
