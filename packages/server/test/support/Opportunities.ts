/** Helpers shared by the opportunity, contact and conversation suites. */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import type { Opportunity, OpportunityOnContact } from "@parley/domain"
import { Effect } from "effect"
import { type ApiResponse, failure, ok } from "./Contract.js"
import { call } from "./TestServer.js"
import { webCredentials } from "./WebChat.js"

export { ok }
/** @deprecated the response type is `ApiResponse` (support/Contract.ts) */
export type Api = ApiResponse
export interface Caller {
  readonly token: string
}

export const post = (who: Caller, path: string, body: unknown) => call(path, { method: "POST", token: who.token, body })
export const put = (who: Caller, path: string, body: unknown) => call(path, { method: "PUT", token: who.token, body })
export const get = (who: Caller, path: string) => call(path, { token: who.token })
export const del = (who: Caller, path: string) => call(path, { method: "DELETE", token: who.token })

/** ISO 8601 UTC with microseconds (SPEC.md 2.2). */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

export const fieldsOf = (r: ApiResponse): Array<string> => failure(r).validation.map((v) => v.field).sort()

export const expect422 = (r: ApiResponse, fields: ReadonlyArray<string>) => {
  expect(r.status).toBe(422)
  expect(r.body).toMatchObject({ status: false, code: 422, data: null })
  expect(fieldsOf(r)).toEqual([...fields].sort())
}

export const expectStatus = (r: ApiResponse, status: number, message?: string) => {
  expect(r.status).toBe(status)
  expect(r.body).toMatchObject({ status: false, code: status, data: null })
  if (message !== undefined) expect(failure(r).message).toBe(message)
}

export const createPipeline = (who: Caller, name: string) =>
  Effect.map(
    post(who, "/api/user/pipelines", { name, agent_type_id: 1, ai_model_id: 1, language_id: 1 }),
    (r) => ok(r, "pipelines.create")
  )

export const createStage = (who: Caller, pipelineId: number, name: string, order: number, nature = "neutral") =>
  Effect.map(
    post(who, `/api/user/pipelines/${pipelineId}/stages`, { name, nature, order }),
    (r) => ok(r, "pipelines.createStage")
  )

/**
 * A pipeline with three stages created so that the first by order ("Inbound") is not the first
 * created: "Qualified" (created first), then "Won" and "Inbound" both placed in front of it.
 */
export const funnel = (who: Caller, name = "Sales") =>
  Effect.gen(function*() {
    const pipeline = yield* createPipeline(who, name)
    const qualified = yield* createStage(who, pipeline.id, "Qualified", 1)
    const won = yield* createStage(who, pipeline.id, "Closed won", 2, "won")
    const inbound = yield* createStage(who, pipeline.id, "Inbound", 1)
    return { pipeline, inbound, qualified, won }
  })

/** A web channel linked to the pipeline: the pipeline's channel for conversations, with its credentials. */
export const linkWebChannel = (who: Caller, pipelineId: number) =>
  Effect.map(
    post(who, "/api/user/channels", { kind: "web", pipeline_id: pipelineId }),
    (r) => webCredentials(ok(r, "channels.create"))
  )

/** An opportunity created with a `contact` (not a `contact_id`): the full record, tags included. */
export const createOpportunity = (who: Caller, body: Record<string, unknown>) =>
  Effect.map(post(who, "/api/user/opportunities", body), (r) => fullOpportunity(ok(r, "opportunities.create")))

/** The full record that creating with `contact` answers (SPEC.md 2.2), not the one for `contact_id`. */
export const fullOpportunity = (o: Opportunity | OpportunityOnContact): Opportunity => {
  if (!("tags" in o)) return expect.fail(`expected the full opportunity, got ${JSON.stringify(o)}`)
  return o
}

/** The record that creating with `contact_id` answers (SPEC.md 2.2): base fields and the joined conversation. */
export const opportunityOnContact = (o: Opportunity | OpportunityOnContact): OpportunityOnContact => {
  if (!("conversation" in o)) return expect.fail(`expected the opportunity on a contact, got ${JSON.stringify(o)}`)
  return o
}

/** An opportunity created with `contact_id` (not a `contact`): base fields and the conversation it joined. */
export const createOnContact = (who: Caller, body: Record<string, unknown>) =>
  Effect.map(post(who, "/api/user/opportunities", body), (r) => opportunityOnContact(ok(r, "opportunities.create")))

const phoneBase = 1000 + Math.floor(Math.random() * 9000)
let phones = 0
/** A fresh phone number: digits with country code, unique within the run. */
export const freshPhone = () => `4917${phoneBase}${String(++phones).padStart(5, "0")}`

export const sqlRows = <A extends object = Record<string, unknown>>(
  strings: TemplateStringsArray,
  ...values: ReadonlyArray<unknown>
) => Effect.flatMap(SqlClient.SqlClient, (sql) => sql<A>(strings, ...values)).pipe(Effect.orDie)

/**
 * A channel row of a kind that has no adapter yet (whatsapp, messenger, ...), as a database from before such kinds
 * were refused holds it: the API no longer creates them (docs/api.md, "Channels").
 */
export const storedChannel = (
  workspaceId: number,
  kind: string,
  options: { readonly name?: string; readonly pipelineId?: number | null; readonly isActive?: boolean } = {}
) =>
  Effect.map(
    sqlRows<{ id: number }>`
      insert into channels (workspace_id, kind, name, pipeline_id, is_active)
      values (${workspaceId}, ${kind}, ${options.name ?? kind}, ${options.pipelineId ?? null}, ${
      options.isActive ?? true
    })
      returning id::int as id`,
    (rows) => ({ id: Number(rows[0]!.id) })
  )

export const count = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>) =>
  Effect.map(sqlRows<{ n: number }>(strings, ...values), (rows) => Number(rows[0]!.n))

/**
 * A workspace with two pipelines and four opportunities on three contacts, created on chosen days:
 *
 * | opp | pipeline | stage     | contact (priority)   | status  | tags      | created_at |
 * |-----|----------|-----------|----------------------|---------|-----------|------------|
 * | o1  | sales    | Inbound   | ana (high)           | active  | VIP       | 2026-01-10 |
 * | o2  | sales    | Qualified | bob (low)            | pending | Hot       | 2026-01-11 |
 * | o3  | support  | Inbound   | ana (second one)     | won     | VIP, Hot  | 2026-01-12 |
 * | o4  | sales    | Won       | cara (medium)        | lost    | (none)    | 2026-01-13 |
 *
 * Contacts were created on 2026-02-01 (ana), 02-02 (bob) and 02-03 (cara). Cara has a custom name
 * "Zed Override" and the identifier "ext-777". `stranger` is another workspace with a look-alike
 * contact and a tag also called VIP, which must never show up.
 */
export const listingFixture = (alice: Caller & { readonly workspace_id: number }, stranger: Caller) =>
  Effect.gen(function*() {
    const sales = yield* funnel(alice, "Sales")
    const support = yield* funnel(alice, "Support")
    const anaPhone = freshPhone()
    const caraPhone = freshPhone()
    const o1 = yield* createOpportunity(alice, {
      pipeline_id: sales.pipeline.id,
      tags: ["VIP"],
      contact: { name: "Ana Ruiz", phone: anaPhone, email: "ana.ruiz@example.com", priority: "high" }
    })
    const o2 = yield* createOpportunity(alice, {
      pipeline_id: sales.pipeline.id,
      stage_id: sales.qualified.id,
      status: "pending",
      tags: ["Hot"],
      contact: { name: "Bob Stone", email: "bob.stone@example.com", priority: "low" }
    })
    const o3 = yield* createOpportunity(alice, {
      pipeline_id: support.pipeline.id,
      status: "won",
      tags: ["vip", "HOT"],
      contact: { phone: anaPhone }
    })
    const o4 = yield* createOpportunity(alice, {
      pipeline_id: sales.pipeline.id,
      stage_id: sales.won.id,
      status: "lost",
      contact: { name: "Cara Diaz", phone: caraPhone }
    })
    ok(
      yield* put(alice, `/api/user/opportunities/${o4.id}`, { contact: { name: "Zed Override" } }),
      "opportunities.update"
    )
    yield* sqlRows`update contacts set identifier = 'ext-777' where id = ${o4.contact_id}`
    const days: Array<[number, string]> = [[o1.id, "2026-01-10"], [o2.id, "2026-01-11"], [o3.id, "2026-01-12"], [
      o4.id,
      "2026-01-13"
    ]]
    for (const [id, day] of days) {
      yield* sqlRows`update opportunities set created_at = ${`${day}T12:00:00Z`}::timestamptz where id = ${id}`
    }
    const contactDays: Array<[number, string]> = [[o1.contact_id, "2026-02-01"], [o2.contact_id, "2026-02-02"], [
      o4.contact_id,
      "2026-02-03"
    ]]
    for (const [id, day] of contactDays) {
      yield* sqlRows`update contacts set created_at = ${`${day}T12:00:00Z`}::timestamptz where id = ${id}`
    }

    const theirs = yield* funnel(stranger, "Sales")
    const foreign = yield* createOpportunity(stranger, {
      pipeline_id: theirs.pipeline.id,
      tags: ["VIP", "Hot"],
      contact: { name: "Ana Ruiz", phone: anaPhone, email: "ana.ruiz@example.com", priority: "high" }
    })
    yield* sqlRows`update opportunities set created_at = '2026-01-12T13:00:00Z' where id = ${foreign.id}`
    yield* sqlRows`update contacts set created_at = '2026-02-02T13:00:00Z' where id = ${foreign.contact_id}`

    const tagId = (o: { tags: ReadonlyArray<{ id: number; name: string }> }, name: string) =>
      o.tags.find((t) => t.name.toLowerCase() === name.toLowerCase())!.id
    return {
      sales,
      support,
      o1,
      o2,
      o3,
      o4,
      foreign,
      anaPhone,
      caraPhone,
      vip: tagId(o1, "VIP"),
      hot: tagId(o2, "Hot"),
      foreignVip: tagId(foreign, "VIP"),
      ana: o1.contact_id as number,
      bob: o2.contact_id as number,
      cara: o4.contact_id as number
    }
  })
