import { expect, layer } from "@effect/vitest"
import { type Scope, Scopes } from "@parley/domain"
import { Effect } from "effect"
import { type ApiResponse, failure } from "./support/Contract.js"
import {
  count,
  createOnContact,
  createOpportunity,
  createPipeline,
  del,
  expect422,
  expectStatus,
  freshPhone,
  fullOpportunity,
  funnel,
  get,
  linkWebChannel,
  listingFixture,
  ok,
  opportunityOnContact,
  post,
  put,
  sqlRows,
  storedChannel,
  TIMESTAMP
} from "./support/Opportunities.js"
import { seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

const SPEC_BASE_FIELDS = [
  "id",
  "status",
  "contact_id",
  "stage_id",
  "pipeline_id",
  "name",
  "notes",
  "context",
  "created_at",
  "updated_at",
  "source",
  "source_id"
]

interface StageEntryRow {
  readonly stage_id: number
  readonly previous_stage_id: number | null
  readonly cause: string
  readonly pipeline_id: number
}

const stageEntries = (opportunityId: number) =>
  sqlRows<
    StageEntryRow
  >`select stage_id, previous_stage_id, cause, pipeline_id from stage_entries where opportunity_id = ${opportunityId} order by id`

layer(TestServerLive())("creating an opportunity", (it) => {
  it.effect("without stage_id it lands in the first stage by order, active, with contact, tags and context", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { inbound, pipeline, qualified } = yield* funnel(alice)
      expect(qualified.id).toBeLessThan(inbound.id)
      const r = yield* post(alice, "/api/user/opportunities", {
        pipeline_id: pipeline.id,
        name: "Website lead",
        notes: "Asked about pricing",
        context: { campaign: "spring", score: 7, nested: { a: [1, 2] } },
        tags: ["VIP", "newsletter"],
        contact: { name: "Ana Ruiz", phone: "+49 151 2345-678", email: "ana@example.com" }
      })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        status: true,
        code: 200,
        validation: [],
        message: "Opportunity created successfully."
      })
      const o = fullOpportunity(ok(r, "opportunities.create"))
      expect(o).toMatchObject({
        status: "active",
        pipeline_id: pipeline.id,
        stage_id: inbound.id,
        stage_name: "Inbound",
        stage_nature: "neutral",
        name: "Website lead",
        notes: "Asked about pricing",
        context: { campaign: "spring", score: 7, nested: { a: [1, 2] } },
        contact_name: "Ana Ruiz",
        contact_phone: "491512345678",
        contact_email: "ana@example.com",
        contact_priority: "medium",
        contact_custom_name: null,
        contact_custom_email: null,
        contact_custom_phone: null,
        conversations: []
      })
      expect(o.tags.map((t) => t.name).sort()).toEqual(["VIP", "newsletter"])
      for (const t of o.tags) expect(Number.isInteger(t.id)).toBe(true)
      expect(o).not.toHaveProperty("conversation")
      expect(o.created_at).toMatch(TIMESTAMP)
      expect(o.updated_at).toMatch(TIMESTAMP)
      expect(Number.isInteger(o.id) && Number.isInteger(o.contact_id)).toBe(true)
    }))

  it.effect("stage_id given places it in that stage, and a given status is kept (pending, won, lost)", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline, qualified, won } = yield* funnel(alice)
      const pending = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        stage_id: qualified.id,
        status: "pending",
        contact: { phone: freshPhone() }
      })
      expect(pending).toMatchObject({ stage_id: qualified.id, stage_name: "Qualified", status: "pending" })
      const closed = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        stage_id: won.id,
        status: "won",
        contact: { phone: freshPhone() }
      })
      expect(closed).toMatchObject({ stage_id: won.id, stage_nature: "won", status: "won" })
      const lost = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        status: "lost",
        contact: { email: "lost@example.com" }
      })
      expect(lost.status).toBe("lost")
      expect(ok(yield* get(alice, `/api/user/opportunities/${pending.id}`), "opportunities.get").status).toBe("pending")
    }))

  it.effect("a status outside pending, active, won and lost is 422 naming status", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      for (const status of ["paused", "open"]) {
        expect422(
          yield* post(alice, "/api/user/opportunities", {
            pipeline_id: pipeline.id,
            status,
            contact: { phone: freshPhone() }
          }),
          ["status"]
        )
      }
      expect(yield* count`select count(*) as n from opportunities where pipeline_id = ${pipeline.id}`).toBe(0)
    }))

  it.effect("tags are created when missing and an existing tag is reused whatever its case", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const first = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        tags: ["VIP"],
        contact: { phone: freshPhone() }
      })
      const vip = first.tags[0]!
      expect(vip.name).toBe("VIP")
      const second = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        tags: ["vip", "Hot", "hot"],
        contact: { phone: freshPhone() }
      })
      expect(second.tags).toHaveLength(2)
      expect(second.tags).toContainEqual({ id: vip.id, name: "VIP" })
      expect(second.tags.map((t) => t.name.toLowerCase()).sort()).toEqual(["hot", "vip"])
      expect(yield* count`select count(*) as n from tags where workspace_id = ${alice.workspace_id}`).toBe(2)
    }))

  it.effect("a phone in any format is stored as digits with country code", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: "+49 151 2345-678" } })
      expect(o.contact_phone).toBe("491512345678")
      const rows = yield* sqlRows<{ phone: string | null }>`select phone from contacts where id = ${o.contact_id}`
      expect(rows[0]!.phone).toBe("491512345678")
      const again = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: "491512345678" } })
      expect(again.id).toBe(o.id)
    }))

  it.effect("an invalid phone is 422 naming contact.phone", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      for (const phone of ["not a phone", "+12", "12345678901234567890"]) {
        const r = yield* post(alice, "/api/user/opportunities", { pipeline_id: pipeline.id, contact: { phone } })
        expect422(r, ["contact.phone"])
      }
      expect(yield* count`select count(*) as n from contacts where workspace_id = ${alice.workspace_id}`).toBe(0)
    }))

  it.effect("a contact matched by phone returns its current (newest) opportunity in the pipeline instead of a second", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const first = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        name: "First",
        contact: { phone: "+44 7700 900123" }
      })
      const same = yield* post(alice, "/api/user/opportunities", {
        pipeline_id: pipeline.id,
        name: "Ignored",
        status: "won",
        contact: { phone: "447700900123", name: "Someone" }
      })
      expect(same.status).toBe(200)
      expect(ok(same, "opportunities.create")).toMatchObject({ id: first.id, name: "First", status: "active" })
      // a second opportunity on the contact (rule 1) becomes the current one
      const newer = yield* createOnContact(alice, {
        pipeline_id: pipeline.id,
        contact_id: first.contact_id,
        name: "Newer"
      })
      const current = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: "447700900123" } })
      expect(current.id).toBe(newer.id)
      expect(current.name).toBe("Newer")
      // "newest" is by created_at, not by id
      yield* sqlRows`update opportunities set created_at = now() + interval '1 hour' where id = ${first.id}`
      const byCreatedAt = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { phone: "447700900123" }
      })
      expect(byCreatedAt.id).toBe(first.id)
      expect(yield* count`select count(*) as n from opportunities where contact_id = ${first.contact_id}`).toBe(2)
      expect(yield* count`select count(*) as n from contacts where workspace_id = ${alice.workspace_id}`).toBe(1)
    }))

  it.effect("the same contact in another pipeline gets a new opportunity there", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const phone = freshPhone()
      const a = yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, contact: { phone } })
      const b = yield* createOpportunity(alice, { pipeline_id: support.pipeline.id, contact: { phone } })
      expect(b.id).not.toBe(a.id)
      expect(b.contact_id).toBe(a.contact_id)
      expect(b.pipeline_id).toBe(support.pipeline.id)
    }))

  it.effect("a contact is matched by email case-insensitively", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const first = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { email: "Maria.Lopez@Example.com" }
      })
      const again = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { email: "maria.lopez@EXAMPLE.COM" }
      })
      expect(again.id).toBe(first.id)
      expect(again.contact_id).toBe(first.contact_id)
      expect(yield* count`select count(*) as n from contacts where workspace_id = ${alice.workspace_id}`).toBe(1)
      expect(yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`).toBe(1)
    }))

  it.effect("a contact is matched on email when the phone sent is new", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const first = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { email: "joe@example.com" } })
      const again = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { email: "joe@example.com", phone: freshPhone() }
      })
      expect(again.id).toBe(first.id)
      expect(yield* count`select count(*) as n from contacts where workspace_id = ${alice.workspace_id}`).toBe(1)
    }))

  it.effect("none of contact_id, contact.email and contact.phone is 422 naming contact.email and contact.phone", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      for (
        const body of [
          { pipeline_id: pipeline.id },
          { pipeline_id: pipeline.id, contact: { name: "Nameless" } },
          { pipeline_id: pipeline.id, contact: { email: null, phone: null } }
        ]
      ) {
        expect422(yield* post(alice, "/api/user/opportunities", body), ["contact.email", "contact.phone"])
      }
    }))

  it.effect("a bad contact.email is 422 naming contact.email", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      for (const email of ["not-an-email", "a@b", "two words@example.com"]) {
        expect422(yield* post(alice, "/api/user/opportunities", { pipeline_id: pipeline.id, contact: { email } }), [
          "contact.email"
        ])
      }
    }))

  it.effect("a contact.priority outside low, medium and high is 422; a given priority is stored", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      expect422(
        yield* post(alice, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          contact: { phone: freshPhone(), priority: "urgent" }
        }),
        ["contact.priority"]
      )
      const o = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { phone: freshPhone(), priority: "low" }
      })
      expect(o.contact_priority).toBe("low")
    }))

  it.effect("a name of 256 characters is 422 naming name; 255 is accepted", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      expect422(
        yield* post(alice, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          name: "x".repeat(256),
          contact: { phone: freshPhone() }
        }),
        ["name"]
      )
      const o = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        name: "y".repeat(255),
        contact: { phone: freshPhone() }
      })
      expect(o.name).toHaveLength(255)
    }))

  it.effect("an unknown pipeline_id and another workspace's pipeline_id are 422 naming pipeline_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const bobs = yield* funnel(bob)
      expect422(
        yield* post(alice, "/api/user/opportunities", { pipeline_id: 987654, contact: { phone: freshPhone() } }),
        ["pipeline_id"]
      )
      expect422(yield* post(alice, "/api/user/opportunities", { contact: { phone: freshPhone() } }), ["pipeline_id"])
      expect422(
        yield* post(alice, "/api/user/opportunities", {
          pipeline_id: bobs.pipeline.id,
          contact: { phone: freshPhone() }
        }),
        ["pipeline_id"]
      )
      expect(yield* count`select count(*) as n from opportunities where pipeline_id = ${bobs.pipeline.id}`).toBe(0)
      expect(
        yield* count`select count(*) as n from contacts where workspace_id in (${alice.workspace_id}, ${bob.workspace_id})`
      ).toBe(0)
    }))

  it.effect("a nonexistent stage_id and another workspace's stage_id are 422 naming stage_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const bobs = yield* funnel(bob)
      expect422(
        yield* post(alice, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          stage_id: 987654,
          contact: { phone: freshPhone() }
        }),
        ["stage_id"]
      )
      expect422(
        yield* post(alice, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          stage_id: bobs.inbound.id,
          contact: { phone: freshPhone() }
        }),
        ["stage_id"]
      )
      expect(yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`).toBe(0)
    }))

  it.effect("a pipeline without stages is 400 `Create a stage first`", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const empty = yield* createPipeline(alice, "Empty")
      const r = yield* post(alice, "/api/user/opportunities", {
        pipeline_id: empty.id,
        contact: { phone: freshPhone() }
      })
      expect(r.status).toBe(400)
      expect(r.body).toEqual({ status: false, code: 400, validation: [], message: "Create a stage first", data: null })
      expect(yield* count`select count(*) as n from opportunities where pipeline_id = ${empty.id}`).toBe(0)
    }))

  it.effect("a stage_id of another pipeline of the same workspace is 400 `Create a stage first`", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const r = yield* post(alice, "/api/user/opportunities", {
        pipeline_id: sales.pipeline.id,
        stage_id: support.inbound.id,
        contact: { phone: freshPhone() }
      })
      expect(r.status).toBe(400)
      expect(r.body).toMatchObject({ status: false, code: 400, message: "Create a stage first", data: null })
      expect(yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`).toBe(0)
    }))

  it.effect("is_test with an email or phone that already exists is 422 naming the taken field", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const phone = freshPhone()
      yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone, email: "taken@example.com" } })
      const before = yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`
      const byPhone = yield* post(alice, "/api/user/opportunities", {
        pipeline_id: pipeline.id,
        is_test: true,
        contact: { phone }
      })
      expect422(byPhone, ["contact.phone"])
      const byEmail = yield* post(alice, "/api/user/opportunities", {
        pipeline_id: pipeline.id,
        is_test: true,
        contact: { email: "Taken@Example.com" }
      })
      expect422(byEmail, ["contact.email"])
      expect422(
        yield* post(alice, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          is_test: true,
          contact: { email: "taken@example.com", phone }
        }),
        ["contact.email", "contact.phone"]
      )
      expect(yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`).toBe(
        before
      )
    }))

  it.effect("is_test with a fresh contact creates a test opportunity whose conversations are test conversations", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      yield* linkWebChannel(alice, pipeline.id)
      const o = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        is_test: true,
        contact: { phone: freshPhone(), email: "fresh@example.com" }
      })
      expect(o.is_test).toBe(true)
      expect(o.conversations.every((c) => c.is_test === true)).toBe(true)
      const onContact = yield* createOnContact(alice, {
        pipeline_id: pipeline.id,
        is_test: true,
        contact_id: o.contact_id
      })
      expect(onContact.is_test).toBe(true)
      const got = ok(yield* get(alice, `/api/user/opportunities/${onContact.id}`), "opportunities.get")
      expect(got.conversations).toHaveLength(1)
      expect(got.conversations[0]).toMatchObject({ id: onContact.conversation.id, is_test: true })
    }))
})

layer(TestServerLive())("creating an opportunity on an existing contact (contact_id)", (it) => {
  it.effect("always creates a new opportunity and answers with base fields and the conversation only", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { inbound, pipeline, qualified } = yield* funnel(alice)
      const channel = yield* linkWebChannel(alice, pipeline.id)
      const first = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { phone: freshPhone(), name: "Kim" }
      })
      const r = yield* post(alice, "/api/user/opportunities", {
        pipeline_id: pipeline.id,
        contact_id: first.contact_id,
        stage_id: qualified.id,
        name: "Upsell",
        context: { plan: "pro" }
      })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        status: true,
        code: 200,
        validation: [],
        message: "Opportunity created successfully."
      })
      const o = opportunityOnContact(ok(r, "opportunities.create"))
      expect(o.id).not.toBe(first.id)
      expect(o).toMatchObject({
        contact_id: first.contact_id,
        pipeline_id: pipeline.id,
        stage_id: qualified.id,
        status: "active",
        name: "Upsell",
        context: { plan: "pro" }
      })
      for (const key of SPEC_BASE_FIELDS) expect(o).toHaveProperty(key)
      expect(Object.keys(o).filter((k) => k.startsWith("contact_") && k !== "contact_id")).toEqual([])
      expect(o).not.toHaveProperty("tags")
      expect(o).not.toHaveProperty("conversations")
      expect(o.conversation).toEqual({ id: o.conversation.id, contact_id: first.contact_id, status: "active" })
      expect(o.created_at).toMatch(TIMESTAMP)
      const rows = yield* sqlRows<
        { channel_id: number; contact_id: number }
      >`select channel_id, contact_id from conversations where id = ${o.conversation.id}`
      expect(rows).toEqual([{ channel_id: channel.id, contact_id: first.contact_id }])
      expect(
        yield* count`select count(*) as n from opportunities where contact_id = ${first.contact_id} and pipeline_id = ${pipeline.id}`
      )
        .toBe(2)
      // the first opportunity is untouched
      const before = ok(yield* get(alice, `/api/user/opportunities/${first.id}`), "opportunities.get")
      expect(before).toMatchObject({ stage_id: inbound.id, name: null, conversations: [] })
      // a third one on the same contact is created too
      const third = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: first.contact_id })
      expect([first.id, o.id]).not.toContain(third.id)
      expect(third.stage_id).toBe(inbound.id)
    }))

  it.effect("joins the contact's existing conversation on the pipeline's channel, not one on another channel", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const other = yield* storedChannel(alice.workspace_id, "whatsapp")
      const channel = yield* linkWebChannel(alice, pipeline.id)
      const first = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      const [elsewhere] = yield* sqlRows<{ id: number }>`
        insert into conversations (workspace_id, contact_id, channel_id) values (${alice.workspace_id}, ${first.contact_id}, ${other.id})
        returning id`
      const [existing] = yield* sqlRows<{ id: number }>`
        insert into conversations (workspace_id, contact_id, channel_id, status)
        values (${alice.workspace_id}, ${first.contact_id}, ${channel.id}, 'paused') returning id`
      const o = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: first.contact_id })
      expect(o.conversation).toEqual({ id: existing!.id, contact_id: first.contact_id, status: "paused" })
      expect(o.conversation.id).not.toBe(elsewhere!.id)
      const again = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: first.contact_id })
      expect(again.conversation.id).toBe(existing!.id)
      expect(yield* count`select count(*) as n from conversations where contact_id = ${first.contact_id}`).toBe(2)
      const pivots = yield* sqlRows<
        { opportunity_id: number }
      >`select opportunity_id from conversation_opportunity where conversation_id = ${
        existing!.id
      } order by opportunity_id`
      expect(pivots.map((p) => p.opportunity_id)).toEqual([o.id, again.id])
      const got = ok(yield* get(alice, `/api/user/opportunities/${o.id}`), "opportunities.get")
      expect(got.conversations.map((c) => c.id)).toEqual([existing!.id])
      expect(got.conversations[0]!.pivot).toEqual({ opportunity_id: o.id, conversation_id: existing!.id })
    }))

  it.effect("creates one conversation on the pipeline's channel when the contact has none there, and reuses it next time", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const channel = yield* linkWebChannel(alice, pipeline.id)
      const first = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      expect(yield* count`select count(*) as n from conversations where contact_id = ${first.contact_id}`).toBe(0)
      const a = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: first.contact_id })
      const b = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: first.contact_id })
      expect(b.conversation.id).toBe(a.conversation.id)
      const rows = yield* sqlRows<
        { channel_id: number }
      >`select channel_id from conversations where contact_id = ${first.contact_id}`
      expect(rows).toEqual([{ channel_id: channel.id }])
    }))

  it.effect("leaves the contact's saved details untouched, whatever contact fields are sent", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const phone = freshPhone()
      const first = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { phone, name: "Original", email: "original@example.com", priority: "low" }
      })
      const o = yield* createOnContact(alice, {
        pipeline_id: pipeline.id,
        contact_id: first.contact_id,
        contact: { name: "Changed", email: "changed@example.com", phone: "+1 415 555 0100", priority: "high" }
      })
      const got = ok(yield* get(alice, `/api/user/opportunities/${o.id}`), "opportunities.get")
      expect(got).toMatchObject({
        contact_id: first.contact_id,
        contact_name: "Original",
        contact_email: "original@example.com",
        contact_phone: phone,
        contact_priority: "low",
        contact_custom_name: null,
        contact_custom_email: null,
        contact_custom_phone: null
      })
      expect(yield* count`select count(*) as n from contacts where workspace_id = ${alice.workspace_id}`).toBe(1)
    }))

  it.effect("ignores invalid contact fields beside contact_id instead of answering 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const phone = freshPhone()
      const first = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { phone, name: "Original", email: "original@example.com", priority: "low" }
      })
      const garbage: Array<unknown> = [
        { email: "not-an-email", phone: "call me maybe", name: "x".repeat(300), priority: "urgent", extra: true },
        "not an object",
        null
      ]
      for (const contact of garbage) {
        const o = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: first.contact_id, contact })
        expect(o.contact_id).toBe(first.contact_id)
      }
      const got = ok(yield* get(alice, `/api/user/opportunities/${first.id}`), "opportunities.get")
      expect(got).toMatchObject({
        contact_name: "Original",
        contact_email: "original@example.com",
        contact_phone: phone,
        contact_priority: "low",
        contact_custom_name: null,
        contact_custom_email: null,
        contact_custom_phone: null
      })
      expect(yield* count`select count(*) as n from opportunities where contact_id = ${first.contact_id}`).toBe(4)
      // without contact_id the same contact is still validated, next to the other fields' errors
      expect422(
        yield* post(alice, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          name: "x".repeat(300),
          contact: { email: "not-an-email" }
        }),
        ["contact.email", "name"]
      )
    }))

  it.effect("works for a contact whose only opportunity is in another pipeline of the workspace", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const first = yield* createOpportunity(alice, {
        pipeline_id: sales.pipeline.id,
        contact: { phone: freshPhone() }
      })
      const o = yield* createOnContact(alice, { pipeline_id: support.pipeline.id, contact_id: first.contact_id })
      expect(o).toMatchObject({
        pipeline_id: support.pipeline.id,
        stage_id: support.inbound.id,
        contact_id: first.contact_id
      })
    }))

  it.effect("a contact_id that is not the user's, unknown, or of a contact without any opportunity is 422 naming contact_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const bobs = yield* funnel(bob)
      const bobsOpportunity = yield* createOpportunity(bob, {
        pipeline_id: bobs.pipeline.id,
        contact: { phone: freshPhone() }
      })
      const [bare] = yield* sqlRows<
        { id: number }
      >`insert into contacts (workspace_id, name) values (${alice.workspace_id}, 'No deals') returning id`
      for (const contactId of [bobsOpportunity.contact_id, 987654, bare!.id]) {
        expect422(yield* post(alice, "/api/user/opportunities", { pipeline_id: pipeline.id, contact_id: contactId }), [
          "contact_id"
        ])
      }
      expect(yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`).toBe(0)
      expect(yield* count`select count(*) as n from opportunities where contact_id = ${bobsOpportunity.contact_id}`)
        .toBe(1)
    }))
})

layer(TestServerLive())("the stage-entry outbox", (it) => {
  it.effect("each create writes one `created` entry; returning the current opportunity writes none", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { inbound, pipeline, qualified } = yield* funnel(alice)
      const phone = freshPhone()
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone } })
      expect(yield* stageEntries(o.id)).toEqual([
        { stage_id: inbound.id, previous_stage_id: null, cause: "created", pipeline_id: pipeline.id }
      ])
      const same = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone } })
      expect(same.id).toBe(o.id)
      expect(yield* stageEntries(o.id)).toHaveLength(1)
      const onContact = yield* createOnContact(alice, {
        pipeline_id: pipeline.id,
        contact_id: o.contact_id,
        stage_id: qualified.id
      })
      expect(yield* stageEntries(onContact.id)).toEqual([
        { stage_id: qualified.id, previous_stage_id: null, cause: "created", pipeline_id: pipeline.id }
      ])
      expect(yield* count`select count(*) as n from stage_entries where workspace_id = ${alice.workspace_id}`).toBe(2)
    }))

  it.effect("a stage move writes one `moved` entry with the previous stage; a PUT that keeps the stage writes none", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { inbound, pipeline, qualified, won } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      ok(yield* put(alice, `/api/user/opportunities/${o.id}`, { stage_id: qualified.id }), "opportunities.update")
      ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { stage_id: qualified.id, name: "Same stage" }),
        "opportunities.update"
      )
      ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { notes: "No stage at all", status: "won" }),
        "opportunities.update"
      )
      ok(yield* put(alice, `/api/user/opportunities/${o.id}`, { stage_id: won.id }), "opportunities.update")
      expect(yield* stageEntries(o.id)).toEqual([
        { stage_id: inbound.id, previous_stage_id: null, cause: "created", pipeline_id: pipeline.id },
        { stage_id: qualified.id, previous_stage_id: inbound.id, cause: "moved", pipeline_id: pipeline.id },
        { stage_id: won.id, previous_stage_id: qualified.id, cause: "moved", pipeline_id: pipeline.id }
      ])
    }))

  it.effect("a rejected stage move writes nothing", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const o = yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, contact: { phone: freshPhone() } })
      expect422(yield* put(alice, `/api/user/opportunities/${o.id}`, { stage_id: support.qualified.id }), ["stage_id"])
      expect(yield* stageEntries(o.id)).toHaveLength(1)
    }))
})

layer(TestServerLive())("concurrent creates", (it) => {
  it.effect("two concurrent creates for the same new phone in a pipeline make one contact and one opportunity", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      for (let round = 0; round < 5; round++) {
        const phone = freshPhone()
        const body = { pipeline_id: pipeline.id, contact: { phone, name: `Racer ${round}` } }
        const [a, b] = yield* Effect.all([
          post(alice, "/api/user/opportunities", body),
          post(alice, "/api/user/opportunities", body)
        ], {
          concurrency: "unbounded"
        })
        expect(a.status).toBe(200)
        expect(b.status).toBe(200)
        expect(ok(a, "opportunities.create").id).toBe(ok(b, "opportunities.create").id)
        expect(
          yield* count`select count(*) as n from contacts where workspace_id = ${alice.workspace_id} and phone = ${phone}`
        ).toBe(1)
        expect(
          yield* count`select count(*) as n from opportunities o join contacts c on c.id = o.contact_id
                       where c.workspace_id = ${alice.workspace_id} and c.phone = ${phone}`
        ).toBe(1)
        expect(
          yield* count`select count(*) as n from stage_entries where opportunity_id = ${
            ok(a, "opportunities.create").id
          }`
        ).toBe(1)
      }
    }))

  it.effect("concurrent creates on one contact_id make two opportunities that share one new conversation", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      yield* linkWebChannel(alice, pipeline.id)
      for (let round = 0; round < 5; round++) {
        const first = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
        const body = { pipeline_id: pipeline.id, contact_id: first.contact_id }
        const [a, b] = yield* Effect.all([
          post(alice, "/api/user/opportunities", body),
          post(alice, "/api/user/opportunities", body)
        ], {
          concurrency: "unbounded"
        })
        expect([a.status, b.status]).toEqual([200, 200])
        const [onA, onB] = [a, b].map((r) => opportunityOnContact(ok(r, "opportunities.create")))
        expect(onA!.id).not.toBe(onB!.id)
        expect(onA!.conversation.id).toBe(onB!.conversation.id)
        expect(yield* count`select count(*) as n from conversations where contact_id = ${first.contact_id}`).toBe(1)
      }
    }))

  it.effect("two concurrent creates for the same new email make one contact and one opportunity", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const [a, b] = yield* Effect.all([
        post(alice, "/api/user/opportunities", { pipeline_id: pipeline.id, contact: { email: "race@example.com" } }),
        post(alice, "/api/user/opportunities", { pipeline_id: pipeline.id, contact: { email: "RACE@example.com" } })
      ], { concurrency: "unbounded" })
      expect([a.status, b.status]).toEqual([200, 200])
      expect(ok(a, "opportunities.create").id).toBe(ok(b, "opportunities.create").id)
      expect(yield* count`select count(*) as n from contacts where workspace_id = ${alice.workspace_id}`).toBe(1)
      expect(yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`).toBe(1)
    }))
})

layer(TestServerLive())("retrieving an opportunity", (it) => {
  it.effect("by id returns the full opportunity", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const created = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        tags: ["a"],
        context: { k: "v" },
        contact: { phone: freshPhone() }
      })
      const r = yield* get(alice, `/api/user/opportunities/${created.id}`)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ status: true, code: 200, validation: [] })
      expect(ok(r, "opportunities.get")).toEqual(created)
    }))

  it.effect("by phone when no id matches, returning the contact's newest opportunity", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const phone = freshPhone()
      const older = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone } })
      const newer = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: older.contact_id })
      const r = yield* get(alice, `/api/user/opportunities/${phone}`)
      expect(r.status).toBe(200)
      expect(ok(r, "opportunities.get").id).toBe(newer.id)
      // the newest by created_at, not by id
      yield* sqlRows`update opportunities set created_at = now() + interval '1 hour' where id = ${older.id}`
      expect(ok(yield* get(alice, `/api/user/opportunities/${phone}`), "opportunities.get").id).toBe(older.id)
    }))

  it.effect("the first match wins: an identifier that is an opportunity id and some contact's phone returns the id's", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { inbound, pipeline } = yield* funnel(alice)
      const byPhone = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      const holder = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { email: "holder@example.com" }
      })
      // an opportunity whose id is also a valid phone, held by the contact whose phone is the same digits
      const bigId = 4_930_000_000 + Math.floor(Math.random() * 1_000_000)
      yield* sqlRows`
        insert into opportunities (id, workspace_id, pipeline_id, stage_id, contact_id, name)
        overriding system value
        values (${bigId}, ${alice.workspace_id}, ${pipeline.id}, ${inbound.id}, ${holder.contact_id}, 'by id')`
      yield* sqlRows`update contacts set phone = ${String(bigId)} where id = ${byPhone.contact_id}`
      const r = yield* get(alice, `/api/user/opportunities/${bigId}`)
      expect(r.status).toBe(200)
      expect(ok(r, "opportunities.get")).toMatchObject({ id: bigId, name: "by id", contact_id: holder.contact_id })
      // and a small id is never taken for a phone
      expect(ok(yield* get(alice, `/api/user/opportunities/${byPhone.id}`), "opportunities.get").id).toBe(byPhone.id)
    }))

  it.effect("pipeline_id narrows a phone lookup and is ignored for an id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const phone = freshPhone()
      const inSales = yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, contact: { phone } })
      const inSupport = yield* createOpportunity(alice, { pipeline_id: support.pipeline.id, contact: { phone } })
      expect(ok(yield* get(alice, `/api/user/opportunities/${phone}`), "opportunities.get").id).toBe(inSupport.id)
      expect(
        ok(yield* get(alice, `/api/user/opportunities/${phone}?pipeline_id=${sales.pipeline.id}`), "opportunities.get")
          .id
      )
        .toBe(inSales.id)
      expect(
        ok(
          yield* get(alice, `/api/user/opportunities/${phone}?pipeline_id=${support.pipeline.id}`),
          "opportunities.get"
        ).id
      )
        .toBe(inSupport.id)
      const other = yield* funnel(alice, "Other")
      expectStatus(yield* get(alice, `/api/user/opportunities/${phone}?pipeline_id=${other.pipeline.id}`), 404)
      const byId = yield* get(alice, `/api/user/opportunities/${inSales.id}?pipeline_id=${support.pipeline.id}`)
      expect(byId.status).toBe(200)
      expect(ok(byId, "opportunities.get").id).toBe(inSales.id)
    }))

  it.effect("another workspace's opportunity id is 403", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const bobs = yield* funnel(bob)
      const o = yield* createOpportunity(bob, { pipeline_id: bobs.pipeline.id, contact: { phone: freshPhone() } })
      const r = yield* get(alice, `/api/user/opportunities/${o.id}`)
      expectStatus(r, 403)
      expect(JSON.stringify(r.body)).not.toContain(o.contact_phone)
    }))

  it.effect("nothing found is 404, and another workspace's contact phone is not visible (404)", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const bobs = yield* funnel(bob)
      const phone = freshPhone()
      yield* createOpportunity(bob, { pipeline_id: bobs.pipeline.id, contact: { phone } })
      expectStatus(yield* get(alice, "/api/user/opportunities/987654"), 404, "Opportunity not found.")
      expectStatus(yield* get(alice, "/api/user/opportunities/4930111222333"), 404)
      expectStatus(yield* get(alice, "/api/user/opportunities/not-a-phone"), 404)
      expectStatus(yield* get(alice, `/api/user/opportunities/${phone}`), 404)
      expect((yield* get(bob, `/api/user/opportunities/${phone}`)).status).toBe(200)
    }))
})

layer(TestServerLive())("updating an opportunity", (it) => {
  it.effect("an update changes only the fields sent", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const created = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        name: "Before",
        notes: "Keep me",
        context: { a: 1 },
        tags: ["x"],
        contact: { phone: freshPhone(), name: "Lee" }
      })
      const r = yield* put(alice, `/api/user/opportunities/${created.id}`, { name: "After" })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        status: true,
        code: 200,
        validation: [],
        message: "Opportunity updated successfully."
      })
      const updated = ok(r, "opportunities.update")
      const { name, updated_at, ...rest } = updated
      const { name: _n, updated_at: _u, ...before } = created
      expect(name).toBe("After")
      expect(rest).toEqual(before)
      expect(updated_at).toMatch(TIMESTAMP)
      expect(updated_at >= created.updated_at).toBe(true)
      const got = ok(yield* get(alice, `/api/user/opportunities/${created.id}`), "opportunities.get")
      expect(got).toEqual(updated)
      const nulled = yield* put(alice, `/api/user/opportunities/${created.id}`, { notes: null })
      expect(ok(nulled, "opportunities.update")).toMatchObject({ notes: null, name: "After" })
    }))

  it.effect("a stage move within the pipeline changes stage_id, stage_name and stage_nature", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline, won } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      expect(o).toMatchObject({ stage_name: "Inbound", stage_nature: "neutral" })
      const moved = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { stage_id: won.id }),
        "opportunities.update"
      )
      expect(moved).toMatchObject({ stage_id: won.id, stage_name: "Closed won", stage_nature: "won" })
    }))

  it.effect("a stage of another pipeline, of another workspace, or none at all is 422 naming stage_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const bobs = yield* funnel(bob)
      const o = yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, contact: { phone: freshPhone() } })
      for (const stageId of [support.qualified.id, bobs.qualified.id, 987654]) {
        expect422(yield* put(alice, `/api/user/opportunities/${o.id}`, { stage_id: stageId, name: "Not applied" }), [
          "stage_id"
        ])
      }
      const got = ok(yield* get(alice, `/api/user/opportunities/${o.id}`), "opportunities.get")
      expect(got).toMatchObject({ stage_id: sales.inbound.id, name: null })
    }))

  it.effect("status accepts active, won and lost; paused, pending and others are 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      for (const status of ["won", "lost", "active"]) {
        expect(ok(yield* put(alice, `/api/user/opportunities/${o.id}`, { status }), "opportunities.update").status)
          .toBe(status)
      }
      for (const status of ["paused", "pending", "closed"]) {
        expect422(yield* put(alice, `/api/user/opportunities/${o.id}`, { status }), ["status"])
      }
      expect(ok(yield* get(alice, `/api/user/opportunities/${o.id}`), "opportunities.get").status).toBe("active")
    }))

  it.effect("context is merged: keys kept and added; null clears it", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        context: { keep: 1, change: "old" },
        contact: { phone: freshPhone() }
      })
      const merged = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { context: { change: "new", added: [1] } }),
        "opportunities.update"
      )
      expect(merged.context).toEqual({ keep: 1, change: "new", added: [1] })
      const untouched = ok(yield* put(alice, `/api/user/opportunities/${o.id}`, { name: "n" }), "opportunities.update")
      expect(untouched.context).toEqual({ keep: 1, change: "new", added: [1] })
      const cleared = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { context: null }),
        "opportunities.update"
      )
      expect(cleared.context).toBeNull()
      const fresh = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { context: { again: true } }),
        "opportunities.update"
      )
      expect(fresh.context).toEqual({ again: true })
    }))

  it.effect("tags are added by name (existing ones reused) and removed by id with deleted_tags", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        tags: ["Alpha", "Beta"],
        contact: { phone: freshPhone() }
      })
      const [alpha, beta] = [...o.tags].sort((a, b) => a.name.localeCompare(b.name))
      const added = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { tags: ["alpha", "Gamma"] }),
        "opportunities.update"
      )
      expect(added.tags.map((t) => t.name).sort()).toEqual(["Alpha", "Beta", "Gamma"])
      expect(added.tags).toContainEqual(alpha)
      const removed = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { deleted_tags: [beta!.id] }),
        "opportunities.update"
      )
      expect(removed.tags.map((t) => t.name).sort()).toEqual(["Alpha", "Gamma"])
      // the tag itself survives: it is only taken off the opportunity
      expect(yield* count`select count(*) as n from tags where workspace_id = ${alice.workspace_id}`).toBe(3)
    }))

  it.effect("contact fields set the custom overrides and priority, leaving the raw contact record as it was", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const phone = freshPhone()
      const o = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { phone, name: "Raw Name", email: "raw@example.com" }
      })
      const updated = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, {
          contact: { name: "Custom Name", email: "custom@example.com", phone: "+44 20 7946 0958", priority: "high" }
        }),
        "opportunities.update"
      )
      expect(updated).toMatchObject({
        contact_name: "Raw Name",
        contact_email: "raw@example.com",
        contact_phone: phone,
        contact_custom_name: "Custom Name",
        contact_custom_email: "custom@example.com",
        contact_custom_phone: "442079460958",
        contact_priority: "high"
      })
      const onlyPriority = ok(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { contact: { priority: "low" } }),
        "opportunities.update"
      )
      expect(onlyPriority).toMatchObject({ contact_priority: "low", contact_custom_name: "Custom Name" })
    }))

  it.effect("a bad contact.email is 422 and changes nothing", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      expect422(yield* put(alice, `/api/user/opportunities/${o.id}`, { name: "Nope", contact: { email: "bad" } }), [
        "contact.email"
      ])
      expect(ok(yield* get(alice, `/api/user/opportunities/${o.id}`), "opportunities.get")).toEqual(o)
    }))

  it.effect("a name over 255 characters is 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      expect422(yield* put(alice, `/api/user/opportunities/${o.id}`, { name: "z".repeat(256) }), ["name"])
    }))

  it.effect("by phone with pipeline_id it updates that pipeline's opportunity", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const phone = freshPhone()
      const inSales = yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, contact: { phone } })
      const inSupport = yield* createOpportunity(alice, { pipeline_id: support.pipeline.id, contact: { phone } })
      const r = ok(
        yield* put(alice, `/api/user/opportunities/${phone}?pipeline_id=${sales.pipeline.id}`, { name: "Sales deal" }),
        "opportunities.update"
      )
      expect(r.id).toBe(inSales.id)
      expect(ok(yield* get(alice, `/api/user/opportunities/${inSupport.id}`), "opportunities.get").name).toBeNull()
      const newest = ok(
        yield* put(alice, `/api/user/opportunities/${phone}`, { name: "Newest" }),
        "opportunities.update"
      )
      expect(newest.id).toBe(inSupport.id)
    }))

  it.effect("another workspace's opportunity and a missing one are 404, and nothing changes", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const bobs = yield* funnel(bob)
      const phone = freshPhone()
      const o = yield* createOpportunity(bob, { pipeline_id: bobs.pipeline.id, tags: ["mine"], contact: { phone } })
      expectStatus(
        yield* put(alice, `/api/user/opportunities/${o.id}`, { name: "Stolen", deleted_tags: [o.tags[0]!.id] }),
        404
      )
      expectStatus(yield* put(alice, `/api/user/opportunities/${phone}`, { name: "Stolen" }), 404)
      expectStatus(
        yield* put(alice, "/api/user/opportunities/987654", { name: "Ghost" }),
        404,
        "Opportunity not found."
      )
      expect(ok(yield* get(bob, `/api/user/opportunities/${o.id}`), "opportunities.get")).toEqual(o)
    }))

  it.effect("deleted_tags naming another workspace's tags removes nothing of theirs", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const bobs = yield* funnel(bob)
      const theirs = yield* createOpportunity(bob, {
        pipeline_id: bobs.pipeline.id,
        tags: ["shared-name"],
        contact: { phone: freshPhone() }
      })
      const mine = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        tags: ["shared-name"],
        contact: { phone: freshPhone() }
      })
      expect(mine.tags[0]!.id).not.toBe(theirs.tags[0]!.id)
      const r = ok(
        yield* put(alice, `/api/user/opportunities/${mine.id}`, { deleted_tags: [theirs.tags[0]!.id] }),
        "opportunities.update"
      )
      expect(r.tags).toEqual(mine.tags)
      expect(ok(yield* get(bob, `/api/user/opportunities/${theirs.id}`), "opportunities.get").tags).toEqual(theirs.tags)
    }))
})

layer(TestServerLive())("scopes of the opportunity, contact and conversation endpoints", (it) => {
  /** The same user, through a token carrying every scope but one. */
  const without = (who: { readonly email: string }, scope: Scope) =>
    Effect.map(tokenFor(who.email, Scopes.filter((s) => s !== scope)), (t) => ({ token: t.token }))

  it.effect("create and update need opportunities:write", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      const byReader = yield* without(alice, "opportunities:write")
      for (
        const r of [
          yield* post(byReader, "/api/user/opportunities", {
            pipeline_id: pipeline.id,
            contact: { phone: freshPhone() }
          }),
          yield* put(byReader, `/api/user/opportunities/${o.id}`, { name: "Nope" })
        ]
      ) {
        expectStatus(r, 403, "Missing required scope: opportunities:write")
      }
      expect(yield* count`select count(*) as n from opportunities where workspace_id = ${alice.workspace_id}`).toBe(1)
      expect(ok(yield* get(alice, `/api/user/opportunities/${o.id}`), "opportunities.get").name).toBeNull()
    }))

  it.effect("retrieve, both lists and list-by-contact need opportunities:read", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      const writer = yield* without(alice, "opportunities:read")
      for (
        const path of [
          `/api/user/opportunities/${o.id}`,
          "/api/user/opportunities",
          "/api/user/contacts",
          `/api/user/contacts/${o.contact_id}/opportunities`
        ]
      ) {
        expectStatus(yield* get(writer, path), 403, "Missing required scope: opportunities:read")
      }
    }))

  it.effect("a conversation update needs conversations:write", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const first = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      const o = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: first.contact_id })
      const other = yield* without(alice, "conversations:write")
      const r = yield* put(other, `/api/user/conversations/${o.conversation.id}`, { status: "paused" })
      expectStatus(r, 403, "Missing required scope: conversations:write")
      const rows = yield* sqlRows<{ status: string }>`select status from conversations where id = ${o.conversation.id}`
      expect(rows[0]!.status).toBe("active")
    }))
})

layer(TestServerLive())("deleting a stage that holds opportunities", (it) => {
  it.effect("is 400 with a message while opportunities are in it; once they move on it can be deleted", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { inbound, pipeline, qualified } = yield* funnel(alice)
      const o = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      const refused = yield* del(alice, `/api/user/stages/${inbound.id}`)
      expect(refused.status).toBe(400)
      expect(refused.body).toMatchObject({ status: false, code: 400, data: null })
      expect(failure(refused).message.length).toBeGreaterThan(0)
      expect(ok(yield* get(alice, `/api/user/pipelines/${pipeline.id}`), "pipelines.get").stages_count).toBe(3)
      ok(yield* put(alice, `/api/user/opportunities/${o.id}`, { stage_id: qualified.id }), "opportunities.update")
      const deleted = yield* del(alice, `/api/user/stages/${inbound.id}`)
      expect(deleted.status).toBe(200)
      const got = ok(yield* get(alice, `/api/user/opportunities/${o.id}`), "opportunities.get")
      expect(got.stage_id).toBe(qualified.id)
      // with the first stage gone, new opportunities land in the new first stage
      const next = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      expect(next.stage_id).toBe(qualified.id)
    }))
})

layer(TestServerLive())("listing opportunities", (it) => {
  const ids = (r: ApiResponse) => {
    expect(r.body).toMatchObject({ status: true, code: 200 })
    return ok(r, "opportunities.list").data.map((o) => o.id)
  }

  it.effect("lists one row per opportunity, newest first, with the paginator fields and no other workspace's rows", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const f = yield* listingFixture(alice, bob)
      const r = yield* get(alice, "/api/user/opportunities")
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ status: true, code: 200, validation: [] })
      const page = ok(r, "opportunities.list")
      expect(page.data.map((o) => o.id)).toEqual([f.o4.id, f.o3.id, f.o2.id, f.o1.id])
      expect(page.data.filter((o) => o.contact_id === f.ana)).toHaveLength(2)
      expect(page).toMatchObject({
        current_page: 1,
        per_page: 25,
        total: 4,
        last_page: 1,
        from: 1,
        to: 4,
        next_page_url: null,
        prev_page_url: null
      })
      for (const o of page.data) {
        expect(o.created_at).toMatch(TIMESTAMP)
        expect(o.updated_at).toMatch(TIMESTAMP)
        expect(o).toHaveProperty("stage_name")
        expect(o).toHaveProperty("contact_phone")
        expect(Array.isArray(o.tags) && Array.isArray(o.conversations)).toBe(true)
      }
      expect(page.data[0]).toEqual(ok(yield* get(alice, `/api/user/opportunities/${f.o4.id}`), "opportunities.get"))
      expect(page.data[0]!.created_at).toBe("2026-01-13T12:00:00.000000Z")
      expect(ids(yield* get(bob, "/api/user/opportunities"))).toEqual([f.foreign.id])
    }))

  it.effect("filters by pipeline_id, stage_id, status and contact priority", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      expect(ids(yield* get(alice, `/api/user/opportunities?pipeline_id=${f.sales.pipeline.id}`))).toEqual([
        f.o4.id,
        f.o2.id,
        f.o1.id
      ])
      expect(ids(yield* get(alice, `/api/user/opportunities?pipeline_id=${f.support.pipeline.id}`))).toEqual([f.o3.id])
      expect(ids(yield* get(alice, `/api/user/opportunities?stage_id=${f.sales.qualified.id}`))).toEqual([f.o2.id])
      expect(
        ids(
          yield* get(alice, `/api/user/opportunities?stage_id=${f.sales.inbound.id}&pipeline_id=${f.sales.pipeline.id}`)
        )
      )
        .toEqual([f.o1.id])
      expect(ids(yield* get(alice, "/api/user/opportunities?status=pending"))).toEqual([f.o2.id])
      expect(ids(yield* get(alice, "/api/user/opportunities?status=won"))).toEqual([f.o3.id])
      expect(ids(yield* get(alice, "/api/user/opportunities?status=active"))).toEqual([f.o1.id])
      expect(ids(yield* get(alice, "/api/user/opportunities?priority=high"))).toEqual([f.o3.id, f.o1.id])
      expect(ids(yield* get(alice, "/api/user/opportunities?priority=low"))).toEqual([f.o2.id])
      expect(ids(yield* get(alice, `/api/user/opportunities?status=lost&pipeline_id=${f.support.pipeline.id}`)))
        .toEqual([])
      expect(ids(yield* get(alice, `/api/user/opportunities?pipeline_id=${f.foreign.pipeline_id}`))).toEqual([])
      expect422(yield* get(alice, "/api/user/opportunities?status=closed"), ["status"])
      expect422(yield* get(alice, "/api/user/opportunities?priority=urgent"), ["priority"])
    }))

  it.effect("q matches the contact's name, email, phone, identifier and custom name", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const q = (text: string) => Effect.map(get(alice, `/api/user/opportunities?q=${encodeURIComponent(text)}`), ids)
      expect(yield* q("ana ru")).toEqual([f.o3.id, f.o1.id])
      expect(yield* q("BOB.STONE@")).toEqual([f.o2.id])
      expect(yield* q(f.caraPhone.slice(-7))).toEqual([f.o4.id])
      expect(yield* q("ext-777")).toEqual([f.o4.id])
      expect(yield* q("zed over")).toEqual([f.o4.id])
      expect(yield* q("nobody-at-all")).toEqual([])
      expect(yield* q("%")).toEqual([])
    }))

  it.effect("tag_ids is any-of in every form (repeated, with brackets, comma-separated) and tags matches names case-insensitively", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const list = (query: string) => Effect.map(get(alice, `/api/user/opportunities?${query}`), ids)
      expect(yield* list(`tag_ids=${f.vip}`)).toEqual([f.o3.id, f.o1.id])
      expect(yield* list(`tag_ids=${f.vip}&tag_ids=${f.hot}`)).toEqual([f.o3.id, f.o2.id, f.o1.id])
      expect(yield* list(`tag_ids[]=${f.hot}`)).toEqual([f.o3.id, f.o2.id])
      expect(yield* list(`tag_ids[]=${f.hot}&tag_ids[]=${f.vip}`)).toEqual([f.o3.id, f.o2.id, f.o1.id])
      expect(yield* list(`tag_ids=${f.vip},${f.hot}`)).toEqual([f.o3.id, f.o2.id, f.o1.id])
      expect(yield* list(`tag_ids=${f.foreignVip}`)).toEqual([])
      // a tag id that is not an integer is refused, not silently dropped (which would list everything)
      expect422(yield* get(alice, "/api/user/opportunities?tag_ids=abc"), ["tag_ids"])
      expect422(yield* get(alice, `/api/user/opportunities?tag_ids[]=${f.vip}&tag_ids[]=0`), ["tag_ids[]"])
      expect(yield* list("tags=vip")).toEqual([f.o3.id, f.o1.id])
      expect(yield* list("tags=HOT&tags=Vip")).toEqual([f.o3.id, f.o2.id, f.o1.id])
      expect(yield* list("tags[]=hot")).toEqual([f.o3.id, f.o2.id])
      expect(yield* list("tags=unknown")).toEqual([])
      expect(yield* list(`tags=vip&pipeline_id=${f.sales.pipeline.id}`)).toEqual([f.o1.id])
    }))

  it.effect("start_date and end_date bound created_at; a date-only end_date covers that whole day", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const list = (query: string) => Effect.map(get(alice, `/api/user/opportunities?${query}`), ids)
      expect(yield* list("start_date=2026-01-11&end_date=2026-01-12")).toEqual([f.o3.id, f.o2.id])
      expect(yield* list("start_date=2026-01-12")).toEqual([f.o4.id, f.o3.id])
      expect(yield* list("end_date=2026-01-10")).toEqual([f.o1.id])
      expect(yield* list(`start_date=${encodeURIComponent("2026-01-12T12:00:01Z")}`)).toEqual([f.o4.id])
      expect(yield* list("start_date=2026-01-14")).toEqual([])
      expect422(yield* get(alice, "/api/user/opportunities?start_date=yesterday"), ["start_date"])
    }))

  it.effect("pages with page and per_page; from and to are null on an empty page; per_page over 100 is 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const p1 = ok(yield* get(alice, "/api/user/opportunities?per_page=3"), "opportunities.list")
      expect(p1.data.map((o) => o.id)).toEqual([f.o4.id, f.o3.id, f.o2.id])
      expect(p1).toMatchObject({
        current_page: 1,
        per_page: 3,
        total: 4,
        last_page: 2,
        from: 1,
        to: 3,
        prev_page_url: null
      })
      expect(new URL(p1.next_page_url!).searchParams.get("page")).toBe("2")
      expect(new URL(p1.next_page_url!).searchParams.get("per_page")).toBe("3")
      const p2 = ok(yield* get(alice, "/api/user/opportunities?per_page=3&page=2"), "opportunities.list")
      expect(p2.data.map((o) => o.id)).toEqual([f.o1.id])
      expect(p2).toMatchObject({ current_page: 2, total: 4, last_page: 2, from: 4, to: 4, next_page_url: null })
      expect(new URL(p2.prev_page_url!).searchParams.get("page")).toBe("1")
      const p3 = ok(yield* get(alice, "/api/user/opportunities?per_page=3&page=3"), "opportunities.list")
      expect(p3).toMatchObject({ current_page: 3, data: [], total: 4, from: null, to: null, next_page_url: null })
      const none = ok(yield* get(alice, "/api/user/opportunities?q=nobody"), "opportunities.list")
      expect(none).toMatchObject({
        data: [],
        total: 0,
        from: null,
        to: null,
        last_page: 1,
        next_page_url: null,
        prev_page_url: null
      })
      expect(ok(yield* get(alice, "/api/user/opportunities?per_page=100"), "opportunities.list").per_page).toBe(100)
      expect422(yield* get(alice, "/api/user/opportunities?per_page=101"), ["per_page"])
      expect422(yield* get(alice, "/api/user/opportunities?per_page=0"), ["per_page"])
      expect422(yield* get(alice, "/api/user/opportunities?page=0"), ["page"])
    }))
})
