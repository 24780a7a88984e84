import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type ApiResponse, failure, ok } from "./support/Contract.js"
import { storedChannel } from "./support/Opportunities.js"
import { call, seedUser, TestServerLive } from "./support/TestServer.js"

const validPipeline = (name: string) => ({ name, agent_type_id: 1, ai_model_id: 1, language_id: 1 })

layer(TestServerLive())("pipelines and stages over REST", (it) => {
  it.effect("creates, lists and retrieves a pipeline with defaults", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* call("/api/user/pipelines", {
        method: "POST",
        token: alice.token,
        body: validPipeline("Sales")
      })
      expect(created.status).toBe(200)
      expect(created.body).toMatchObject({
        status: true,
        code: 200,
        validation: [],
        message: "Pipeline created successfully.",
        data: {
          name: "Sales",
          workspace_id: alice.workspace_id,
          status: "active",
          rag_mode: "none",
          model_temperature: 0.7,
          followup_limit: 6,
          is_unknown_contacts_enabled: true,
          is_model_routing_enabled: false,
          is_model_routing: [],
          stages: []
        }
      })
      expect(ok(created, "pipelines.create").created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
      const list = yield* call("/api/user/pipelines", { token: alice.token })
      expect(ok(list, "pipelines.list").map((p) => p.name)).toEqual(["Sales"])
      const got = yield* call(`/api/user/pipelines/${ok(created, "pipelines.create").id}`, { token: alice.token })
      expect(ok(got, "pipelines.get").id).toBe(ok(created, "pipelines.create").id)
    }))

  it.effect("a create body with five bad fields gives 422 naming all five", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* call("/api/user/pipelines", {
        method: "POST",
        token: alice.token,
        body: { name: "", agent_type_id: "x", language_id: 1, model_temperature: 3, rag_mode: "magic" }
      })
      expect(r.status).toBe(422)
      const failed = failure(r)
      expect(failed.status).toBe(false)
      expect(failed.code).toBe(422)
      expect(failed.data).toBeNull()
      const fields = failed.validation.map((v) => v.field).sort()
      expect(fields).toEqual(["agent_type_id", "ai_model_id", "model_temperature", "name", "rag_mode"])
    }))
})

type Caller = { readonly token: string }

const post = (who: Caller, path: string, body: unknown) => call(path, { method: "POST", token: who.token, body })
const put = (who: Caller, path: string, body: unknown) => call(path, { method: "PUT", token: who.token, body })
const get = (who: Caller, path: string) => call(path, { token: who.token })

const fieldsOf = (r: ApiResponse) => failure(r).validation.map((v) => v.field).sort()

const expect422 = (r: ApiResponse, fields: ReadonlyArray<string>) => {
  expect(r.status).toBe(422)
  expect(r.body).toMatchObject({ status: false, code: 422, data: null })
  expect(fieldsOf(r)).toEqual([...fields].sort())
  const more = fields.length - 1
  const failed = failure(r)
  expect(failed.message).toBe(
    failed.validation[0]!.message + (more > 0 ? ` (and ${more} more error${more > 1 ? "s" : ""})` : "")
  )
}

const createPipeline = (who: Caller, body: Record<string, unknown>) =>
  Effect.map(post(who, "/api/user/pipelines", body), (r) => {
    expect(r.status).toBe(200)
    return ok(r, "pipelines.create")
  })

const pool = (ids: readonly [number, number, number, number] = [10, 11, 12, 20]) => [
  { tier: "router", ai_model_id: ids[0], instructions: "Pick the cheapest tier that can answer." },
  { tier: "simple", ai_model_id: ids[1] },
  { tier: "moderate", ai_model_id: ids[2] },
  { tier: "complex", ai_model_id: ids[3], instructions: "Hard questions." }
]

const stage = (name: string, order: number, extra: Record<string, unknown> = {}) => ({
  name,
  nature: "neutral",
  order,
  ...extra
})

const createStage = (who: Caller, pipelineId: number, body: Record<string, unknown>) =>
  Effect.map(post(who, `/api/user/pipelines/${pipelineId}/stages`, body), (r) => {
    expect(r.status).toBe(200)
    return ok(r, "pipelines.createStage")
  })

/** `[name, order]` of a pipeline's stages as the list endpoint returns them. */
const stageOrder = (who: Caller, pipelineId: number) =>
  Effect.map(get(who, `/api/user/pipelines/${pipelineId}/stages`), (r) => {
    expect(r.status).toBe(200)
    return ok(r, "pipelines.listStages").map((s) => [s.name, s.order])
  })

layer(TestServerLive())("pipeline settings over REST", (it) => {
  it.effect("an update changes only the fields sent", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, {
        ...validPipeline("Support"),
        description: "Helps customers",
        persona: "Friendly",
        instructions: "Be brief",
        rag_mode: "hybrid",
        dialect_id: 2,
        model_temperature: 0.3,
        max_conversation_cost: 1.5,
        followup_limit: 3,
        is_unknown_contacts_enabled: false
      })
      const updated = yield* put(alice, `/api/user/pipelines/${created.id}`, {
        name: "Support desk",
        agent_memory_window: 40
      })
      expect(updated.status).toBe(200)
      expect(updated.body).toMatchObject({
        status: true,
        code: 200,
        validation: [],
        message: "Pipeline updated successfully."
      })
      const { name, agent_memory_window, updated_at, ...rest } = ok(updated, "pipelines.update")
      const { name: _n, agent_memory_window: oldWindow, updated_at: _u, ...before } = created
      expect(name).toBe("Support desk")
      expect(agent_memory_window).toBe(40)
      expect(oldWindow).toBe(20)
      expect(rest).toEqual(before)
      expect(updated_at >= created.updated_at).toBe(true)
      const got = yield* get(alice, `/api/user/pipelines/${created.id}`)
      expect(ok(got, "pipelines.get")).toEqual(ok(updated, "pipelines.update"))
    }))

  it.effect("an update with null clears a nullable field and leaves the others", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, {
        ...validPipeline("Clearable"),
        description: "Old",
        persona: "Kept",
        dialect_id: 1
      })
      const updated = yield* put(alice, `/api/user/pipelines/${created.id}`, { description: null, dialect_id: null })
      expect(updated.status).toBe(200)
      expect(ok(updated, "pipelines.update")).toMatchObject({
        description: null,
        dialect_id: null,
        persona: "Kept",
        name: "Clearable"
      })
    }))

  it.effect("an empty update body changes nothing", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, { ...validPipeline("Untouched"), description: "Same" })
      const updated = yield* put(alice, `/api/user/pipelines/${created.id}`, {})
      expect(updated.status).toBe(200)
      const { updated_at: _a, ...after } = ok(updated, "pipelines.update")
      const { updated_at: _b, ...before } = created
      expect(after).toEqual(before)
    }))

  it.effect("status and is_archived can be updated and bad values are 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, validPipeline("Archivable"))
      const updated = yield* put(alice, `/api/user/pipelines/${created.id}`, { status: "inactive", is_archived: true })
      expect(ok(updated, "pipelines.update")).toMatchObject({ status: "inactive", is_archived: true })
      expect422(yield* put(alice, `/api/user/pipelines/${created.id}`, { status: "paused", is_archived: "yes" }), [
        "is_archived",
        "status"
      ])
    }))

  it.effect("a pipeline name is unique per workspace, case-insensitively, on create and on rename", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const first = yield* createPipeline(alice, validPipeline("Sales"))
      const dup = yield* post(alice, "/api/user/pipelines", validPipeline("Sales"))
      expect422(dup, ["name"])
      expect(failure(dup).validation[0]!.message).toBe("The name has already been taken.")
      expect422(yield* post(alice, "/api/user/pipelines", validPipeline("  sALES ")), ["name"])
      const other = yield* createPipeline(alice, validPipeline("Support"))
      expect422(yield* put(alice, `/api/user/pipelines/${other.id}`, { name: "sales" }), ["name"])
      const same = yield* put(alice, `/api/user/pipelines/${first.id}`, { name: "Sales" })
      expect(same.status).toBe(200)
      const list = yield* get(alice, "/api/user/pipelines")
      expect(ok(list, "pipelines.list").map((p) => p.name)).toEqual(["Sales", "Support"])
    }))

  it.effect("the same pipeline name is fine in another workspace", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const a = yield* createPipeline(alice, validPipeline("Sales"))
      const b = yield* createPipeline(bob, validPipeline("Sales"))
      expect(a.workspace_id).toBe(alice.workspace_id)
      expect(b.workspace_id).toBe(bob.workspace_id)
      expect(b.id).not.toBe(a.id)
    }))

  it.effect("the name is trimmed and an all-blank name is 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, validPipeline("  Padded  "))
      expect(created.name).toBe("Padded")
      expect422(yield* post(alice, "/api/user/pipelines", validPipeline("   ")), ["name"])
    }))

  it.effect("unknown ai_model_id, agent_type_id and language_id give 422 naming each of them", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* post(alice, "/api/user/pipelines", {
        name: "Ghost",
        agent_type_id: 999,
        ai_model_id: 999,
        language_id: 999
      })
      expect422(r, ["agent_type_id", "ai_model_id", "language_id"])
      const messages = Object.fromEntries(failure(r).validation.map((v) => [v.field, v.message]))
      expect(messages).toEqual({
        agent_type_id: "The selected agent type does not exist.",
        ai_model_id: "The selected AI model does not exist.",
        language_id: "The selected language does not exist."
      })
      expect(ok(yield* get(alice, "/api/user/pipelines"), "pipelines.list")).toEqual([])
    }))

  it.effect("an update to an unknown ai_model_id is 422 and keeps the old model", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, validPipeline("Modelled"))
      expect422(yield* put(alice, `/api/user/pipelines/${created.id}`, { ai_model_id: 999, name: "Renamed" }), [
        "ai_model_id"
      ])
      const got = yield* get(alice, `/api/user/pipelines/${created.id}`)
      expect(ok(got, "pipelines.get")).toMatchObject({ ai_model_id: 1, name: "Modelled" })
      const switched = yield* put(alice, `/api/user/pipelines/${created.id}`, { ai_model_id: 21 })
      expect(ok(switched, "pipelines.update").ai_model_id).toBe(21)
    }))

  it.effect("a dialect of another language is 422 on create; the language's own dialect is stored", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* post(alice, "/api/user/pipelines", { ...validPipeline("Mixed"), dialect_id: 4 })
      expect422(r, ["dialect_id"])
      expect(failure(r).validation[0]!.message).toBe("The selected dialect belongs to another language.")
      expect422(yield* post(alice, "/api/user/pipelines", { ...validPipeline("Unknown dialect"), dialect_id: 999 }), [
        "dialect_id"
      ])
      const spanish = yield* createPipeline(alice, { ...validPipeline("Spanish"), language_id: 2, dialect_id: 5 })
      expect(spanish).toMatchObject({ language_id: 2, dialect_id: 5 })
    }))

  it.effect("an update checks the dialect against the pipeline's language, stored or sent", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, validPipeline("English"))
      expect422(yield* put(alice, `/api/user/pipelines/${created.id}`, { dialect_id: 4 }), ["dialect_id"])
      const both = yield* put(alice, `/api/user/pipelines/${created.id}`, { language_id: 2, dialect_id: 4 })
      expect(both.status).toBe(200)
      expect(ok(both, "pipelines.update")).toMatchObject({ language_id: 2, dialect_id: 4 })
      expect422(yield* put(alice, `/api/user/pipelines/${created.id}`, { language_id: 1, dialect_id: 6 }), [
        "dialect_id"
      ])
    }))

  it.effect("changing only the language while a dialect of the old language is set is 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, { ...validPipeline("British"), dialect_id: 2 })
      expect422(yield* put(alice, `/api/user/pipelines/${created.id}`, { language_id: 2 }), ["dialect_id"])
      const got = yield* get(alice, `/api/user/pipelines/${created.id}`)
      expect(ok(got, "pipelines.get")).toMatchObject({ language_id: 1, dialect_id: 2 })
      const cleared = yield* put(alice, `/api/user/pipelines/${created.id}`, { language_id: 2, dialect_id: null })
      expect(ok(cleared, "pipelines.update")).toMatchObject({ language_id: 2, dialect_id: null })
    }))

  it.effect("model routing enabled without is_model_routing is 422 on is_model_routing", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* post(alice, "/api/user/pipelines", {
        ...validPipeline("Routed"),
        is_model_routing_enabled: true
      })
      expect422(r, ["is_model_routing"])
      expect(failure(r).validation[0]!.message).toContain("is_model_routing_enabled")
    }))

  it.effect("a model pool of 3 entries is 422, as is one naming a tier twice", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const three = yield* post(alice, "/api/user/pipelines", {
        ...validPipeline("Three"),
        is_model_routing_enabled: true,
        is_model_routing: pool().slice(0, 3)
      })
      expect422(three, ["is_model_routing"])
      expect(failure(three).validation[0]!.message).toContain("exactly 4 entries")
      const twice = pool()
      twice[3] = { ...twice[3]!, tier: "simple" }
      expect422(
        yield* post(alice, "/api/user/pipelines", {
          ...validPipeline("Twice"),
          is_model_routing_enabled: true,
          is_model_routing: twice
        }),
        ["is_model_routing"]
      )
      const badTier = pool()
      badTier[1] = { ...badTier[1]!, tier: "trivial" }
      const bad = yield* post(alice, "/api/user/pipelines", {
        ...validPipeline("Bad tier"),
        is_model_routing_enabled: true,
        is_model_routing: badTier
      })
      expect422(bad, ["is_model_routing.1.tier"])
      expect(failure(bad).validation[0]!.message).toBe(
        "The is_model_routing.1.tier field must be one of \"router\", \"simple\", \"moderate\" or \"complex\"."
      )
    }))

  it.effect("a model pool entry with an unknown model is 422 naming the entry", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* post(alice, "/api/user/pipelines", {
        ...validPipeline("Unknown model"),
        is_model_routing_enabled: true,
        is_model_routing: pool([10, 11, 999, 20])
      })
      expect422(r, ["is_model_routing.2.ai_model_id"])
    }))

  it.effect("four valid tiers are stored and returned", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createPipeline(alice, {
        ...validPipeline("Smart"),
        is_model_routing_enabled: true,
        is_model_routing: pool()
      })
      const expected = [
        { tier: "router", ai_model_id: 10, instructions: "Pick the cheapest tier that can answer." },
        { tier: "simple", ai_model_id: 11, instructions: null },
        { tier: "moderate", ai_model_id: 12, instructions: null },
        { tier: "complex", ai_model_id: 20, instructions: "Hard questions." }
      ]
      expect(created.is_model_routing_enabled).toBe(true)
      expect(created.is_model_routing).toEqual(expected)
      const got = yield* get(alice, `/api/user/pipelines/${created.id}`)
      expect(ok(got, "pipelines.get").is_model_routing).toEqual(expected)
      const listed = yield* get(alice, "/api/user/pipelines")
      expect(ok(listed, "pipelines.list")[0]!.is_model_routing).toEqual(expected)
    }))

  it.effect("enabling routing on update needs a pool unless the pipeline already has one", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const plain = yield* createPipeline(alice, validPipeline("Plain"))
      expect422(yield* put(alice, `/api/user/pipelines/${plain.id}`, { is_model_routing_enabled: true }), [
        "is_model_routing"
      ])
      const withPool = yield* put(alice, `/api/user/pipelines/${plain.id}`, {
        is_model_routing_enabled: true,
        is_model_routing: pool()
      })
      expect(withPool.status).toBe(200)
      expect(ok(withPool, "pipelines.update").is_model_routing).toHaveLength(4)
      const off = yield* put(alice, `/api/user/pipelines/${plain.id}`, { is_model_routing_enabled: false })
      expect(ok(off, "pipelines.update").is_model_routing_enabled).toBe(false)
      const on = yield* put(alice, `/api/user/pipelines/${plain.id}`, { is_model_routing_enabled: true })
      expect(on.status).toBe(200)
      expect(ok(on, "pipelines.update").is_model_routing_enabled).toBe(true)
      const replaced = yield* put(alice, `/api/user/pipelines/${plain.id}`, { is_model_routing: pool([1, 1, 13, 21]) })
      expect(ok(replaced, "pipelines.update").is_model_routing.map((e) => e.ai_model_id)).toEqual([1, 1, 13, 21])
    }))

  it.effect("model_temperature accepts the bounds 0.1 and 1.0 and rejects 0.05 and 1.01", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const low = yield* createPipeline(alice, { ...validPipeline("Cold"), model_temperature: 0.1 })
      expect(low.model_temperature).toBe(0.1)
      const high = yield* createPipeline(alice, { ...validPipeline("Hot"), model_temperature: 1.0 })
      expect(high.model_temperature).toBe(1)
      const tooLow = yield* post(alice, "/api/user/pipelines", { ...validPipeline("Frozen"), model_temperature: 0.05 })
      expect422(tooLow, ["model_temperature"])
      expect(failure(tooLow).validation[0]!.message).toBe("The model_temperature field must be between 0.1 and 1.0.")
      expect422(yield* post(alice, "/api/user/pipelines", { ...validPipeline("Boiling"), model_temperature: 1.01 }), [
        "model_temperature"
      ])
      expect422(yield* put(alice, `/api/user/pipelines/${low.id}`, { model_temperature: 0.05 }), ["model_temperature"])
      const updated = yield* put(alice, `/api/user/pipelines/${low.id}`, { model_temperature: 0.55 })
      expect(ok(updated, "pipelines.update").model_temperature).toBe(0.55)
    }))

  it.effect("integer settings reject out-of-range and fractional values", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      expect422(
        yield* post(alice, "/api/user/pipelines", {
          ...validPipeline("Limits"),
          followup_limit: 0,
          max_conversation_messages: 0,
          no_of_relevant_points: 2.5,
          max_conversation_cost: -1
        }),
        ["followup_limit", "max_conversation_cost", "max_conversation_messages", "no_of_relevant_points"]
      )
    }))

  it.effect("a channel of the caller's workspace is linked; one of another workspace is 422 on channel_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const bobs = yield* post(bob, "/api/user/channels", { kind: "web" })
      expect(bobs.status).toBe(200)
      const foreign = yield* post(alice, "/api/user/pipelines", {
        ...validPipeline("Thief"),
        channel_id: ok(bobs, "channels.create").id
      })
      expect422(foreign, ["channel_id"])
      expect(failure(foreign).validation[0]!.message).toBe("The selected channel does not exist.")
      expect(ok(yield* get(bob, `/api/user/channels/${ok(bobs, "channels.create").id}`), "channels.get").pipeline_id)
        .toBeNull()

      const alices = yield* post(alice, "/api/user/channels", { kind: "web" })
      const linked = yield* createPipeline(alice, {
        ...validPipeline("Linked"),
        channel_id: ok(alices, "channels.create").id
      })
      expect(linked.channel_id).toBe(ok(alices, "channels.create").id)
      expect(
        ok(yield* get(alice, `/api/user/channels/${ok(alices, "channels.create").id}`), "channels.get").pipeline_id
      ).toBe(linked.id)

      const other = yield* createPipeline(alice, validPipeline("Other"))
      expect422(yield* put(alice, `/api/user/pipelines/${other.id}`, { channel_id: ok(bobs, "channels.create").id }), [
        "channel_id"
      ])
      expect(ok(yield* get(bob, `/api/user/channels/${ok(bobs, "channels.create").id}`), "channels.get").pipeline_id)
        .toBeNull()
    }))

  it.effect("channel_id null on update unlinks the pipeline's channels", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const channel = yield* post(alice, "/api/user/channels", { kind: "web" })
      const linked = yield* createPipeline(alice, {
        ...validPipeline("Linked"),
        channel_id: ok(channel, "channels.create").id
      })
      const unlinked = yield* put(alice, `/api/user/pipelines/${linked.id}`, { channel_id: null })
      expect(ok(unlinked, "pipelines.update").channel_id).toBeNull()
      expect(
        ok(yield* get(alice, `/api/user/channels/${ok(channel, "channels.create").id}`), "channels.get").pipeline_id
      ).toBeNull()
    }))

  it.effect("a missing pipeline answers 404 on GET and PUT", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      for (
        const r of [
          yield* get(alice, "/api/user/pipelines/424242"),
          yield* put(alice, "/api/user/pipelines/424242", { name: "X" })
        ]
      ) {
        expect(r.status).toBe(404)
        expect(r.body).toEqual({ status: false, code: 404, validation: [], message: "Pipeline not found.", data: null })
      }
    }))
})

layer(TestServerLive())("stages over REST", (it) => {
  it.effect("a stage created at an occupied order takes it and shifts the others down", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Funnel"))
      const a = yield* createStage(alice, p.id, stage("Alpha", 1))
      expect(a).toMatchObject({ name: "Alpha", order: 1, pipeline_id: p.id, nature: "neutral" })
      const b = yield* post(alice, `/api/user/pipelines/${p.id}/stages`, stage("Bravo", 1))
      expect(b.status).toBe(200)
      expect(b.body).toMatchObject({ status: true, code: 200, validation: [], message: "Stage created successfully." })
      expect(ok(b, "pipelines.createStage").order).toBe(1)
      expect(yield* stageOrder(alice, p.id)).toEqual([["Bravo", 1], ["Alpha", 2]])
      yield* createStage(alice, p.id, stage("Charlie", 2))
      expect(yield* stageOrder(alice, p.id)).toEqual([["Bravo", 1], ["Charlie", 2], ["Alpha", 3]])
    }))

  it.effect("an order past the end appends the stage at count + 1", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Appending"))
      yield* createStage(alice, p.id, stage("One", 1))
      const far = yield* createStage(alice, p.id, stage("Far", 50))
      expect(far.order).toBe(2)
      expect(yield* stageOrder(alice, p.id)).toEqual([["One", 1], ["Far", 2]])
    }))

  it.effect("changing a stage's order re-numbers its siblings contiguously from 1", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Reorder"))
      const ids: Record<string, number> = {}
      for (const [i, name] of ["A", "B", "C", "D"].entries()) {
        ids[name] = (yield* createStage(alice, p.id, stage(`Stage ${name}`, i + 1))).id
      }
      const up = yield* put(alice, `/api/user/stages/${ids.D}`, { order: 1 })
      expect(up.status).toBe(200)
      expect(ok(up, "pipelines.updateStage").order).toBe(1)
      expect(yield* stageOrder(alice, p.id)).toEqual([["Stage D", 1], ["Stage A", 2], ["Stage B", 3], ["Stage C", 4]])
      yield* put(alice, `/api/user/stages/${ids.D}`, { order: 3 })
      expect(yield* stageOrder(alice, p.id)).toEqual([["Stage A", 1], ["Stage B", 2], ["Stage D", 3], ["Stage C", 4]])
      const last = yield* put(alice, `/api/user/stages/${ids.A}`, { order: 99 })
      expect(ok(last, "pipelines.updateStage").order).toBe(4)
      expect(yield* stageOrder(alice, p.id)).toEqual([["Stage B", 1], ["Stage D", 2], ["Stage C", 3], ["Stage A", 4]])
      yield* put(alice, `/api/user/stages/${ids.C}`, { order: 3, name: "Stage C2" })
      expect(yield* stageOrder(alice, p.id)).toEqual([["Stage B", 1], ["Stage D", 2], ["Stage C2", 3], ["Stage A", 4]])
    }))

  it.effect("reordering a stage leaves other pipelines' stages alone", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("First"))
      const q = yield* createPipeline(alice, validPipeline("Second"))
      const a = yield* createStage(alice, p.id, stage("P one", 1))
      yield* createStage(alice, p.id, stage("P two", 2))
      yield* createStage(alice, q.id, stage("Q one", 1))
      yield* createStage(alice, q.id, stage("Q two", 2))
      yield* put(alice, `/api/user/stages/${a.id}`, { order: 2 })
      yield* createStage(alice, p.id, stage("P zero", 1))
      expect(yield* stageOrder(alice, q.id)).toEqual([["Q one", 1], ["Q two", 2]])
      expect(yield* stageOrder(alice, p.id)).toEqual([["P zero", 1], ["P two", 2], ["P one", 3]])
    }))

  it.effect("deleting a stage re-numbers the remaining ones", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Deleting"))
      const ids: Array<number> = []
      for (const [i, name] of ["One", "Two", "Three", "Four"].entries()) {
        ids.push((yield* createStage(alice, p.id, stage(name, i + 1))).id)
      }
      const del = yield* call(`/api/user/stages/${ids[1]}`, { method: "DELETE", token: alice.token })
      expect(del.status).toBe(200)
      expect(del.body).toMatchObject({
        status: true,
        code: 200,
        message: "Stage deleted successfully.",
        data: { id: ids[1], deleted: true }
      })
      expect(yield* stageOrder(alice, p.id)).toEqual([["One", 1], ["Three", 2], ["Four", 3]])
      yield* call(`/api/user/stages/${ids[0]}`, { method: "DELETE", token: alice.token })
      expect(yield* stageOrder(alice, p.id)).toEqual([["Three", 1], ["Four", 2]])
      const again = yield* call(`/api/user/stages/${ids[0]}`, { method: "DELETE", token: alice.token })
      expect(again.status).toBe(404)
      expect(failure(again).message).toBe("Stage not found.")
      const got = yield* get(alice, `/api/user/pipelines/${p.id}`)
      expect(ok(got, "pipelines.get").stages_count).toBe(2)
    }))

  it.effect("a stage name under 3 characters is 422 on name", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Names"))
      const r = yield* post(alice, `/api/user/pipelines/${p.id}/stages`, stage("Hi", 1))
      expect422(r, ["name"])
      expect(failure(r).validation[0]!.message).toBe("The name field must be at least 3 characters.")
      const s = yield* createStage(alice, p.id, stage("Hey", 1))
      expect422(yield* put(alice, `/api/user/stages/${s.id}`, { name: "Yo" }), ["name"])
    }))

  it.effect("an enter_condition under 20 characters is 422 on enter_condition", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Conditions"))
      expect422(
        yield* post(
          alice,
          `/api/user/pipelines/${p.id}/stages`,
          stage("Qualified", 1, { enter_condition: "too short" })
        ),
        [
          "enter_condition"
        ]
      )
      const qualified = yield* createStage(
        alice,
        p.id,
        stage("Qualified", 1, { enter_condition: "The lead confirmed a budget" })
      )
      expect(qualified.enter_condition).toBe("The lead confirmed a budget")
    }))

  it.effect("missing nature and order, and a bad nature, are 422 naming each field", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Required"))
      expect422(yield* post(alice, `/api/user/pipelines/${p.id}/stages`, { name: "Nameless" }), ["nature", "order"])
      expect422(yield* post(alice, `/api/user/pipelines/${p.id}/stages`, { name: "Odd", nature: "maybe", order: 0 }), [
        "nature",
        "order"
      ])
    }))

  it.effect("is_opening_message true without opening_message_type is 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Openers"))
      const r = yield* post(
        alice,
        `/api/user/pipelines/${p.id}/stages`,
        stage("Welcome", 1, { is_opening_message: true })
      )
      expect422(r, ["opening_message_type"])
      const ai = yield* createStage(
        alice,
        p.id,
        stage("Welcome", 1, { is_opening_message: true, opening_message_type: "ai_generated" })
      )
      expect(ai).toMatchObject({
        is_opening_message: true,
        opening_message_type: "ai_generated",
        static_opening_message: null
      })
    }))

  it.effect("a static opening message without its text is 422; with text it is stored", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Static"))
      const base = { is_opening_message: true, opening_message_type: "static" }
      expect422(yield* post(alice, `/api/user/pipelines/${p.id}/stages`, stage("Hello", 1, base)), [
        "static_opening_message"
      ])
      expect422(
        yield* post(
          alice,
          `/api/user/pipelines/${p.id}/stages`,
          stage("Hello", 1, { ...base, static_opening_message: "   " })
        ),
        ["static_opening_message"]
      )
      const hello = yield* createStage(
        alice,
        p.id,
        stage("Hello", 1, { ...base, static_opening_message: "Hi! How can I help?" })
      )
      expect(hello).toMatchObject({ opening_message_type: "static", static_opening_message: "Hi! How can I help?" })
    }))

  it.effect("an update applies the opening-message rules to the stored stage merged with the change", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Merged"))
      const s = yield* createStage(alice, p.id, stage("Plain", 1))
      expect422(yield* put(alice, `/api/user/stages/${s.id}`, { is_opening_message: true }), ["opening_message_type"])
      expect422(
        yield* put(alice, `/api/user/stages/${s.id}`, { is_opening_message: true, opening_message_type: "static" }),
        [
          "static_opening_message"
        ]
      )
      const welcomed = yield* put(alice, `/api/user/stages/${s.id}`, {
        is_opening_message: true,
        opening_message_type: "static",
        static_opening_message: "Welcome!"
      })
      expect(welcomed.status).toBe(200)
      expect422(yield* put(alice, `/api/user/stages/${s.id}`, { static_opening_message: null }), [
        "static_opening_message"
      ])
      const off = yield* put(alice, `/api/user/stages/${s.id}`, { is_opening_message: false })
      expect(ok(off, "pipelines.updateStage")).toMatchObject({
        is_opening_message: false,
        static_opening_message: "Welcome!"
      })
    }))

  it.effect("a stage update changes only the fields sent", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Partial"))
      const s = yield* createStage(
        alice,
        p.id,
        stage("Discovery", 1, { description: "Learn needs", notes: "internal", nature: "neutral" })
      )
      const r = yield* put(alice, `/api/user/stages/${s.id}`, { instructions: "Ask about budget", nature: "won" })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ message: "Stage updated successfully." })
      const { instructions, nature, updated_at: _u, ...rest } = ok(r, "pipelines.updateStage")
      const { instructions: _i, nature: _n, updated_at: _v, ...before } = s
      expect(instructions).toBe("Ask about budget")
      expect(nature).toBe("won")
      expect(rest).toEqual(before)
    }))

  it.effect("a parent_id of another pipeline is 422; one of the same pipeline is stored", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Parent"))
      const q = yield* createPipeline(alice, validPipeline("Elsewhere"))
      const foreignParent = yield* createStage(alice, q.id, stage("Q stage", 1))
      const r = yield* post(
        alice,
        `/api/user/pipelines/${p.id}/stages`,
        stage("Child", 1, { parent_id: foreignParent.id })
      )
      expect422(r, ["parent_id"])
      expect(failure(r).validation[0]!.message).toBe("The parent stage must be another stage of the same pipeline.")
      expect(yield* stageOrder(alice, p.id)).toEqual([])
      const parent = yield* createStage(alice, p.id, stage("Parent", 1))
      const child = yield* createStage(alice, p.id, stage("Child", 2, { parent_id: parent.id }))
      expect(child.parent_id).toBe(parent.id)
      expect422(yield* put(alice, `/api/user/stages/${child.id}`, { parent_id: foreignParent.id }), ["parent_id"])
      expect422(yield* put(alice, `/api/user/stages/${child.id}`, { parent_id: child.id }), ["parent_id"])
      expect422(yield* post(alice, `/api/user/pipelines/${p.id}/stages`, stage("Orphan", 1, { parent_id: 999999 })), [
        "parent_id"
      ])
    }))

  it.effect("deleting a parent stage clears its children's parent_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Family"))
      const parent = yield* createStage(alice, p.id, stage("Parent", 1))
      const child = yield* createStage(alice, p.id, stage("Child", 2, { parent_id: parent.id }))
      yield* call(`/api/user/stages/${parent.id}`, { method: "DELETE", token: alice.token })
      const stages = ok(yield* get(alice, `/api/user/pipelines/${p.id}/stages`), "pipelines.listStages")
      expect(stages).toHaveLength(1)
      expect(stages[0]).toMatchObject({ id: child.id, parent_id: null, order: 1 })
    }))

  it.effect("GET pipeline returns its stages in stage order with the count", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const p = yield* createPipeline(alice, validPipeline("Ordered"))
      yield* createStage(alice, p.id, stage("Won", 1, { nature: "won" }))
      yield* createStage(alice, p.id, stage("Lost", 2, { nature: "lost" }))
      yield* createStage(alice, p.id, stage("New lead", 1))
      const got = yield* get(alice, `/api/user/pipelines/${p.id}`)
      expect(got.status).toBe(200)
      expect(ok(got, "pipelines.get").stages.map((s) => [s.name, s.order, s.nature])).toEqual([
        ["New lead", 1, "neutral"],
        ["Won", 2, "won"],
        ["Lost", 3, "lost"]
      ])
      expect(ok(got, "pipelines.get").stages_count).toBe(3)
      const list = yield* get(alice, "/api/user/pipelines")
      expect(ok(list, "pipelines.list")[0]!.stages_count).toBe(3)
      expect(ok(list, "pipelines.list")[0]).not.toHaveProperty("stages")
    }))

  it.effect("a stage of a missing pipeline is 404 and a missing stage is 404", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* post(alice, "/api/user/pipelines/777777/stages", stage("Nowhere", 1))
      expect(r.status).toBe(404)
      expect(failure(r).message).toBe("Pipeline not found.")
      const u = yield* put(alice, "/api/user/stages/777777", { name: "Nowhere" })
      expect(u.status).toBe(404)
      expect(failure(u).message).toBe("Stage not found.")
    }))
})

layer(TestServerLive())("pipeline options over REST", (it) => {
  it.effect("returns the providers and no models without ai_provider_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* get(alice, "/api/user/pipeline-options")
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ status: true, code: 200, validation: [] })
      expect(ok(r, "pipelines.options").ai_providers).toEqual([
        { id: 1, slug: "local", name: "Parley local model" },
        { id: 2, slug: "openai", name: "OpenAI" },
        { id: 3, slug: "anthropic", name: "Anthropic" }
      ])
      expect(ok(r, "pipelines.options").ai_models).toEqual([])
      expect(ok(r, "pipelines.options").agent_types.map((a) => a.id)).toEqual([1, 2, 3, 4, 5])
    }))

  it.effect("with ai_provider_id returns that provider's models with numeric prices", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* get(alice, "/api/user/pipeline-options?ai_provider_id=3")
      expect(r.status).toBe(200)
      expect(ok(r, "pipelines.options").ai_models).toEqual([
        {
          id: 20,
          ai_provider_id: 3,
          name: "Claude Opus 4",
          model: "claude-opus-4-20250514",
          input_price_per_million: 15,
          output_price_per_million: 75,
          context_window: 200000
        },
        {
          id: 21,
          ai_provider_id: 3,
          name: "Claude Sonnet 4",
          model: "claude-sonnet-4-20250514",
          input_price_per_million: 3,
          output_price_per_million: 15,
          context_window: 200000
        },
        {
          id: 22,
          ai_provider_id: 3,
          name: "Claude 3.5 Haiku",
          model: "claude-3-5-haiku-20241022",
          input_price_per_million: 0.8,
          output_price_per_million: 4,
          context_window: 200000
        }
      ])
      const openai = yield* get(alice, "/api/user/pipeline-options?ai_provider_id=2")
      expect(ok(openai, "pipelines.options").ai_models.map((m) => m.id)).toEqual([10, 11, 12, 13, 14, 15])
      expect(
        ok(openai, "pipelines.options").ai_models.every((m) =>
          m.ai_provider_id === 2 && typeof m.input_price_per_million === "number"
        )
      )
        .toBe(true)
      expect(ok(openai, "pipelines.options").ai_models[1]!.input_price_per_million).toBe(0.4)
      expect(ok(yield* get(alice, "/api/user/pipeline-options?ai_provider_id=999"), "pipelines.options").ai_models)
        .toEqual([])
    }))

  it.effect("a non-integer ai_provider_id is 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      expect422(yield* get(alice, "/api/user/pipeline-options?ai_provider_id=abc"), ["ai_provider_id"])
    }))

  it.effect("returns every language with its dialects, and `dialects` for language_code (default en)", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* get(alice, "/api/user/pipeline-options")
      const languages = ok(r, "pipelines.options").languages
      expect(languages.map((l) => l.code)).toEqual(["en", "es", "pt", "fr", "de", "it", "nl", "ar"])
      expect(languages[0]).toEqual({
        id: 1,
        code: "en",
        name: "English",
        dialects: [
          { id: 1, language_id: 1, code: "en-US", name: "American English" },
          { id: 2, language_id: 1, code: "en-GB", name: "British English" },
          { id: 3, language_id: 1, code: "en-AU", name: "Australian English" }
        ]
      })
      for (const l of languages) expect(l.dialects.every((d) => d.language_id === l.id)).toBe(true)
      expect(ok(r, "pipelines.options").dialects.map((d) => d.code)).toEqual(["en-US", "en-GB", "en-AU"])
      const es = yield* get(alice, "/api/user/pipeline-options?language_code=es")
      expect(ok(es, "pipelines.options").dialects.map((d) => d.code)).toEqual(["es-ES", "es-MX", "es-AR"])
      const upper = yield* get(alice, "/api/user/pipeline-options?language_code=PT")
      expect(ok(upper, "pipelines.options").dialects.map((d) => d.code)).toEqual(["pt-BR", "pt-PT"])
      const unknown = yield* get(alice, "/api/user/pipeline-options?language_code=xx")
      expect(ok(unknown, "pipelines.options").dialects).toEqual([])
      expect(ok(unknown, "pipelines.options").languages).toHaveLength(8)
    }))

  it.effect("lists only the caller's workspace channels", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      expect(ok(yield* get(alice, "/api/user/pipeline-options"), "pipelines.options").channels).toEqual([])
      const web = yield* post(alice, "/api/user/channels", { kind: "web", name: "Site chat" })
      const wa = yield* storedChannel(alice.workspace_id, "whatsapp", { name: "WhatsApp", isActive: false })
      yield* post(bob, "/api/user/channels", { kind: "web", name: "Bob chat" })
      const r = yield* get(alice, "/api/user/pipeline-options")
      expect(ok(r, "pipelines.options").channels).toEqual([
        { id: ok(web, "channels.create").id, kind: "web", name: "Site chat", pipeline_id: null, is_active: true },
        { id: wa.id, kind: "whatsapp", name: "WhatsApp", pipeline_id: null, is_active: false }
      ])
      expect(ok(yield* get(bob, "/api/user/pipeline-options"), "pipelines.options").channels.map((c) => c.name))
        .toEqual([
          "Bob chat"
        ])
    }))

  it.effect("needs the pipelines:read scope", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser({ scopes: ["pipelines:write"] })
      const r = yield* get(alice, "/api/user/pipeline-options")
      expect(r.status).toBe(403)
      expect(failure(r).message).toBe("Missing required scope: pipelines:read")
    }))
})
