import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { ApiResponse } from "./support/Contract.js"
import {
  createOnContact,
  createOpportunity,
  expect422,
  freshPhone,
  funnel,
  get,
  listingFixture,
  ok,
  sqlRows,
  TIMESTAMP
} from "./support/Opportunities.js"
import { seedUser, TestServerLive } from "./support/TestServer.js"

const ofContact = (who: { token: string }, identifier: string | number, query = "") =>
  Effect.map(get(who, `/api/user/contacts/${identifier}/opportunities${query}`), (r) => {
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ status: true, code: 200, validation: [] })
    return ok(r, "contacts.opportunities")
  })

/** A contact row with a chosen id, so that the id also reads as a phone number. */
const contactWithId = (workspaceId: number, id: number, name: string) =>
  sqlRows<
    { id: number }
  >`insert into contacts (id, workspace_id, name) overriding system value values (${id}, ${workspaceId}, ${name}) returning id`

layer(TestServerLive())("a contact's opportunities", (it) => {
  it.effect("by contact id: every opportunity of the contact, full shape, newest first by created_at", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const phone = freshPhone()
      const a = yield* createOpportunity(alice, {
        pipeline_id: sales.pipeline.id,
        tags: ["t"],
        contact: { phone, name: "Dana" }
      })
      const b = yield* createOpportunity(alice, { pipeline_id: support.pipeline.id, contact: { phone } })
      const c = yield* createOnContact(alice, { pipeline_id: sales.pipeline.id, contact_id: a.contact_id })
      const other = yield* createOpportunity(alice, {
        pipeline_id: sales.pipeline.id,
        contact: { phone: freshPhone() }
      })
      // creation order a, b, c; created_at order b, a, c (newest first: c, a, b)
      yield* sqlRows`update opportunities set created_at = '2026-01-01T00:00:00Z' where id = ${b.id}`
      yield* sqlRows`update opportunities set created_at = '2026-01-02T00:00:00Z' where id = ${a.id}`
      yield* sqlRows`update opportunities set created_at = '2026-01-03T00:00:00Z' where id = ${c.id}`
      const list = yield* ofContact(alice, a.contact_id)
      expect(list.map((o) => o.id)).toEqual([c.id, a.id, b.id])
      expect(list.map((o) => o.id)).not.toContain(other.id)
      const [, second] = list
      expect(second).toEqual(ok(yield* get(alice, `/api/user/opportunities/${a.id}`), "opportunities.get"))
      expect(second).toMatchObject({
        contact_name: "Dana",
        contact_phone: phone,
        stage_name: "Inbound",
        tags: [{ name: "t" }]
      })
      for (const o of list) expect(o.created_at).toMatch(TIMESTAMP)
    }))

  it.effect("by phone when the identifier is not a contact id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { pipeline } = yield* funnel(alice)
      const a = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: "+49 151 2345-678" } })
      const b = yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: a.contact_id })
      expect((yield* ofContact(alice, "491512345678")).map((o) => o.id)).toEqual([b.id, a.id])
    }))

  it.effect("an all-digit identifier is tried as a contact id first, then retried as a phone when nothing matches", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { inbound, pipeline } = yield* funnel(alice)
      const base = 4_930_000_000 + Math.floor(Math.random() * 1_000_000) * 2
      // a contact whose id is `base` and which holds an opportunity
      yield* contactWithId(alice.workspace_id, base, "By id")
      const [byIdOpportunity] = yield* sqlRows<{ id: number }>`
        insert into opportunities (workspace_id, pipeline_id, stage_id, contact_id)
        values (${alice.workspace_id}, ${pipeline.id}, ${inbound.id}, ${base}) returning id`
      // another contact whose phone is the same digits
      const byPhone = yield* createOpportunity(alice, { pipeline_id: pipeline.id, contact: { phone: String(base) } })
      expect((yield* ofContact(alice, base)).map((o) => o.id)).toEqual([byIdOpportunity!.id])
      // a contact id without opportunities: the identifier is retried as a phone
      yield* contactWithId(alice.workspace_id, base + 1, "No deals")
      const phoneOfNext = yield* createOpportunity(alice, {
        pipeline_id: pipeline.id,
        contact: { phone: String(base + 1) }
      })
      expect((yield* ofContact(alice, base + 1)).map((o) => o.id)).toEqual([phoneOfNext.id])
      expect(phoneOfNext.contact_id).not.toBe(base + 1)
      expect(byPhone.contact_id).not.toBe(base)
    }))

  it.effect("pipeline_id keeps only that pipeline's opportunities, by id and by phone", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const sales = yield* funnel(alice, "Sales")
      const support = yield* funnel(alice, "Support")
      const phone = freshPhone()
      const a = yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, contact: { phone } })
      const b = yield* createOpportunity(alice, { pipeline_id: support.pipeline.id, contact: { phone } })
      expect((yield* ofContact(alice, a.contact_id, `?pipeline_id=${sales.pipeline.id}`)).map((o) => o.id)).toEqual([
        a.id
      ])
      expect((yield* ofContact(alice, phone, `?pipeline_id=${support.pipeline.id}`)).map((o) => o.id)).toEqual([b.id])
      const empty = yield* funnel(alice, "Empty")
      expect(yield* ofContact(alice, a.contact_id, `?pipeline_id=${empty.pipeline.id}`)).toEqual([])
    }))

  it.effect("no match is 200 with an empty list, never 404, including another workspace's contact id and phone", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const bobs = yield* funnel(bob)
      const phone = freshPhone()
      const theirs = yield* createOpportunity(bob, { pipeline_id: bobs.pipeline.id, contact: { phone } })
      for (const identifier of ["987654", "4930999888777", "not-a-phone", String(theirs.contact_id), phone]) {
        expect(yield* ofContact(alice, identifier)).toEqual([])
      }
      expect((yield* ofContact(bob, theirs.contact_id)).map((o) => o.id)).toEqual([theirs.id])
    }))
})

layer(TestServerLive())("listing contacts", (it) => {
  const ids = (r: ApiResponse) => {
    expect(r.status).toBe(200)
    return ok(r, "contacts.list").data.map((c) => c.id)
  }

  it.effect("lists one row per contact, newest first, with opportunities_count and the paginator fields", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const f = yield* listingFixture(alice, bob)
      const r = yield* get(alice, "/api/user/contacts")
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ status: true, code: 200, validation: [] })
      const page = ok(r, "contacts.list")
      expect(page.data.map((c) => c.id)).toEqual([f.cara, f.bob, f.ana])
      expect(page).toMatchObject({
        current_page: 1,
        per_page: 25,
        total: 3,
        last_page: 1,
        from: 1,
        to: 3,
        next_page_url: null,
        prev_page_url: null
      })
      const [cara, , ana] = page.data
      expect(ana).toMatchObject({
        name: "Ana Ruiz",
        email: "ana.ruiz@example.com",
        phone: f.anaPhone,
        priority: "high",
        opportunities_count: 2
      })
      expect(cara).toMatchObject({
        name: "Cara Diaz",
        custom_name: "Zed Override",
        identifier: "ext-777",
        phone: f.caraPhone,
        opportunities_count: 1,
        created_at: "2026-02-03T12:00:00.000000Z"
      })
      for (const c of page.data) {
        expect(c.created_at).toMatch(TIMESTAMP)
        expect(c.updated_at).toMatch(TIMESTAMP)
      }
      expect(ids(yield* get(bob, "/api/user/contacts"))).toEqual([f.foreign.contact_id])
    }))

  it.effect("filters by pipeline_id, status, priority and q", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const list = (query: string) => Effect.map(get(alice, `/api/user/contacts?${query}`), ids)
      expect(yield* list(`pipeline_id=${f.support.pipeline.id}`)).toEqual([f.ana])
      expect(yield* list(`pipeline_id=${f.sales.pipeline.id}`)).toEqual([f.cara, f.bob, f.ana])
      expect(yield* list("status=pending")).toEqual([f.bob])
      expect(yield* list("status=won")).toEqual([f.ana])
      expect(yield* list(`status=won&pipeline_id=${f.sales.pipeline.id}`)).toEqual([])
      expect(yield* list("priority=low")).toEqual([f.bob])
      expect(yield* list("priority=medium")).toEqual([f.cara])
      expect(yield* list("q=ruiz")).toEqual([f.ana])
      expect(yield* list("q=BOB.STONE%40example")).toEqual([f.bob])
      expect(yield* list(`q=${f.caraPhone.slice(-7)}`)).toEqual([f.cara])
      expect(yield* list("q=ext-777")).toEqual([f.cara])
      expect422(yield* get(alice, "/api/user/contacts?status=paused"), ["status"])
    }))

  it.effect("tag_ids is any-of in every form and a contact appears once however many of its opportunities match", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const list = (query: string) => Effect.map(get(alice, `/api/user/contacts?${query}`), ids)
      expect(yield* list(`tag_ids=${f.vip}`)).toEqual([f.ana])
      expect(yield* list(`tag_ids=${f.vip}&tag_ids=${f.hot}`)).toEqual([f.bob, f.ana])
      expect(yield* list(`tag_ids[]=${f.hot}`)).toEqual([f.bob, f.ana])
      expect(yield* list(`tag_ids=${f.hot},${f.vip}`)).toEqual([f.bob, f.ana])
      expect(yield* list(`tag_ids=${f.foreignVip}`)).toEqual([])
      expect422(yield* get(alice, "/api/user/contacts?tag_ids=1,x"), ["tag_ids"])
    }))

  it.effect("start_date and end_date bound the contact's created_at", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const list = (query: string) => Effect.map(get(alice, `/api/user/contacts?${query}`), ids)
      expect(yield* list("start_date=2026-02-02")).toEqual([f.cara, f.bob])
      expect(yield* list("end_date=2026-02-02")).toEqual([f.bob, f.ana])
      expect(yield* list("start_date=2026-02-02&end_date=2026-02-02")).toEqual([f.bob])
      expect(yield* list("start_date=2026-03-01")).toEqual([])
    }))

  it.effect("pages with page and per_page; per_page over 100 is 422", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const f = yield* listingFixture(alice, yield* seedUser())
      const p1 = ok(yield* get(alice, "/api/user/contacts?per_page=2"), "contacts.list")
      expect(p1.data.map((c) => c.id)).toEqual([f.cara, f.bob])
      expect(p1).toMatchObject({
        current_page: 1,
        per_page: 2,
        total: 3,
        last_page: 2,
        from: 1,
        to: 2,
        prev_page_url: null
      })
      expect(new URL(p1.next_page_url!).searchParams.get("page")).toBe("2")
      const p2 = ok(yield* get(alice, "/api/user/contacts?per_page=2&page=2"), "contacts.list")
      expect(p2.data.map((c) => c.id)).toEqual([f.ana])
      expect(p2).toMatchObject({ current_page: 2, from: 3, to: 3, next_page_url: null })
      const empty = ok(yield* get(alice, "/api/user/contacts?per_page=2&page=5"), "contacts.list")
      expect(empty).toMatchObject({ data: [], from: null, to: null, total: 3 })
      expect422(yield* get(alice, "/api/user/contacts?per_page=101"), ["per_page"])
    }))
})
