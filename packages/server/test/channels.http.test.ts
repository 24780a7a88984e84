import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AppSecret } from "../src/config/AppSecret.js"
import { Identity } from "../src/identity/Identity.js"
import { type ApiResponse, failure, ok } from "./support/Contract.js"
import { storedChannel } from "./support/Opportunities.js"
import { call, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

type Caller = { readonly token: string }

const post = (who: Caller, path: string, body?: unknown) => call(path, { method: "POST", token: who.token, body })
const put = (who: Caller, path: string, body: unknown) => call(path, { method: "PUT", token: who.token, body })
const get = (who: Caller, path: string) => call(path, { token: who.token })

const expect422 = (r: ApiResponse, fields: ReadonlyArray<string>) => {
  expect(r.status).toBe(422)
  expect(r.body).toMatchObject({ status: false, code: 422, data: null })
  expect(failure(r).validation.map((v) => v.field).sort()).toEqual([...fields].sort())
}

const createChannel = (who: Caller, body: Record<string, unknown>) =>
  Effect.map(post(who, "/api/user/channels", body), (r) => {
    expect(r.status).toBe(200)
    return ok(r, "channels.create")
  })

const createPipeline = (who: Caller, name: string) =>
  Effect.map(post(who, "/api/user/pipelines", { name, agent_type_id: 1, ai_model_id: 1, language_id: 1 }), (r) => {
    expect(r.status).toBe(200)
    return ok(r, "pipelines.create")
  })

const storedSecret = (id: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ secret_ciphertext: string | null; row: string }>`
      select secret_ciphertext, row_to_json(c)::text as row from channels c where id = ${id}`).pipe(
      Effect.map((rows) => rows[0]!)
    )

const CLIENT_ID = /^wc_[0-9A-Za-z]{32}$/
const CLIENT_SECRET = /^wcs_[0-9A-Za-z]{48}$/

layer(TestServerLive())("channels over REST", (it) => {
  describe("credentials", () => {
    it.effect("creating a web channel returns a wc_ client id and a secret, with defaults", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const r = yield* post(alice, "/api/user/channels", { kind: "web" })
        expect(r.status).toBe(200)
        expect(r.body).toMatchObject({
          status: true,
          code: 200,
          validation: [],
          message: "Channel created successfully. Store the client secret now: it is not shown again.",
          data: {
            workspace_id: alice.workspace_id,
            kind: "web",
            name: "Web chat",
            pipeline_id: null,
            is_active: true,
            callback_url: null,
            allowed_origins: [],
            allowed_ips: []
          }
        })
        expect(ok(r, "channels.create").client_id).toMatch(CLIENT_ID)
        expect(ok(r, "channels.create").client_secret).toMatch(CLIENT_SECRET)
        expect(ok(r, "channels.create").created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
      }))

    it.effect("the client secret is never returned by GET, list or update", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const created = yield* createChannel(alice, { kind: "web", name: "Site" })
        const { client_secret, ...channel } = created
        expect(client_secret).toMatch(CLIENT_SECRET)
        const got = yield* get(alice, `/api/user/channels/${created.id}`)
        expect(got.status).toBe(200)
        expect(ok(got, "channels.get")).not.toHaveProperty("client_secret")
        expect(ok(got, "channels.get")).toEqual(channel)
        const list = yield* get(alice, "/api/user/channels")
        expect(ok(list, "channels.list")).toHaveLength(1)
        expect(ok(list, "channels.list")[0]).not.toHaveProperty("client_secret")
        const updated = yield* put(alice, `/api/user/channels/${created.id}`, { name: "Renamed" })
        expect(updated.status).toBe(200)
        expect(ok(updated, "channels.update")).not.toHaveProperty("client_secret")
        for (const r of [got, list, updated]) expect(JSON.stringify(r.body)).not.toContain(client_secret)
      }))

    it.effect("the secret is stored encrypted, never in plain text", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const created = yield* createChannel(alice, { kind: "web" })
        const stored = yield* storedSecret(created.id)
        expect(stored.secret_ciphertext).not.toBeNull()
        expect(stored.secret_ciphertext).not.toContain(created.client_secret)
        expect(stored.secret_ciphertext).not.toContain(created.client_secret!.slice(4))
        expect(stored.row).not.toContain(created.client_secret)
        const secrets = yield* AppSecret
        expect(secrets.decrypt(stored.secret_ciphertext!)).toBe(created.client_secret)
      }))

    it.effect("two channels get different client ids and secrets", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const a = yield* createChannel(alice, { kind: "web" })
        const b = yield* createChannel(alice, { kind: "web" })
        expect(a.client_id).not.toBe(b.client_id)
        expect(a.client_secret).not.toBe(b.client_secret)
      }))

    it.effect("rotate replaces both the client id and the secret, and returns the new secret once", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const created = yield* createChannel(alice, { kind: "web", callback_url: "https://example.com/hook" })
        const before = yield* storedSecret(created.id)
        const r = yield* post(alice, `/api/user/channels/${created.id}/rotate`)
        expect(r.status).toBe(200)
        expect(r.body).toMatchObject({
          status: true,
          code: 200,
          message: "Credentials rotated. Store the new client secret now: it is not shown again.",
          data: { id: created.id, kind: "web", callback_url: "https://example.com/hook" }
        })
        const rotated = ok(r, "channels.rotate")
        expect(rotated.client_id).toMatch(CLIENT_ID)
        expect(rotated.client_secret).toMatch(CLIENT_SECRET)
        expect(rotated.client_id).not.toBe(created.client_id)
        expect(rotated.client_secret).not.toBe(created.client_secret)
        const after = yield* storedSecret(created.id)
        expect(after.secret_ciphertext).not.toBe(before.secret_ciphertext)
        expect(after.row).not.toContain(rotated.client_secret)
        expect((yield* AppSecret).decrypt(after.secret_ciphertext!)).toBe(rotated.client_secret)
        const got = yield* get(alice, `/api/user/channels/${created.id}`)
        expect(ok(got, "channels.get").client_id).toBe(rotated.client_id)
        expect(ok(got, "channels.get")).not.toHaveProperty("client_secret")
      }))

    it.effect("a widget channel has a wc_ client id and a secret (it signs reply webhooks only), both rotated", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const created = yield* createChannel(alice, { kind: "widget" })
        expect(created).toMatchObject({ kind: "widget", name: "Website widget" })
        expect(created.client_id).toMatch(CLIENT_ID)
        expect(created.client_secret).toMatch(/^wcs_/)
        const stored = (yield* storedSecret(created.id)).secret_ciphertext
        expect(stored).not.toContain(created.client_secret)
        const rotated = yield* post(alice, `/api/user/channels/${created.id}/rotate`)
        expect(rotated.status).toBe(200)
        expect(ok(rotated, "channels.rotate").client_id).toMatch(CLIENT_ID)
        expect(ok(rotated, "channels.rotate").client_id).not.toBe(created.client_id)
        expect(ok(rotated, "channels.rotate").client_secret).toMatch(/^wcs_/)
        expect(ok(rotated, "channels.rotate").client_secret).not.toBe(created.client_secret)
      }))

    it.effect("a kind without an adapter is refused with 422 naming kind; a stored one cannot be activated", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const r0 = yield* post(alice, "/api/user/channels", { kind: "linkedin", is_active: false })
        expect422(r0, ["kind"])
        expect(failure(r0).message).toBe(
          "The linkedin channel kind cannot be connected yet; the kinds that work are web, widget, whatsapp, messenger, instagram, telegram, sms, email."
        )
        expect(ok(yield* get(alice, "/api/user/channels"), "channels.list")).toEqual([])

        // a row a database from before holds: it may be renamed, never activated, and has no client id to rotate
        const stored = yield* storedChannel(alice.workspace_id, "linkedin", { name: "LinkedIn", isActive: false })
        const path = `/api/user/channels/${stored.id}`
        expect(ok(yield* put(alice, path, { name: "Old page" }), "channels.update")).toMatchObject({
          kind: "linkedin",
          name: "Old page",
          client_id: null,
          is_active: false
        })
        const activate = yield* put(alice, path, { is_active: true })
        expect422(activate, ["kind"])
        expect(ok(yield* get(alice, path), "channels.get").is_active).toBe(false)
        const r = yield* post(alice, `${path}/rotate`)
        expect422(r, ["kind"])
        expect(failure(r).message).toContain("linkedin")
      }))
  })

  describe("updates and validation", () => {
    it.effect("an update sets callback_url, allowlists, is_active and pipeline_id, and leaves the rest", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const pipeline = yield* createPipeline(alice, "Sales")
        const created = yield* createChannel(alice, { kind: "web", name: "Site" })
        const r = yield* put(alice, `/api/user/channels/${created.id}`, {
          callback_url: "https://hooks.example.com/parley",
          allowed_origins: ["https://shop.example.com", "http://localhost:5173"],
          allowed_ips: ["203.0.113.7", "198.51.100.0/24", "2001:db8::/32"],
          is_active: false,
          pipeline_id: pipeline.id
        })
        expect(r.status).toBe(200)
        expect(r.body).toMatchObject({ message: "Channel updated successfully." })
        const { client_secret: _s, updated_at: _u, ...before } = created
        const data = ok(r, "channels.update")
        expect(data).toEqual({
          ...before,
          updated_at: data.updated_at,
          callback_url: "https://hooks.example.com/parley",
          allowed_origins: ["https://shop.example.com", "http://localhost:5173"],
          allowed_ips: ["203.0.113.7", "198.51.100.0/24", "2001:db8::/32"],
          is_active: false,
          pipeline_id: pipeline.id
        })
        const got = yield* get(alice, `/api/user/channels/${created.id}`)
        expect(ok(got, "channels.get")).toEqual(data)
        const linked = yield* get(alice, `/api/user/pipelines/${pipeline.id}`)
        expect(ok(linked, "pipelines.get").channel_id).toBe(created.id)
      }))

    it.effect("a second update changes only what it sends; null clears callback_url and pipeline_id", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const pipeline = yield* createPipeline(alice, "Support")
        const created = yield* createChannel(alice, {
          kind: "web",
          pipeline_id: pipeline.id,
          callback_url: "https://example.com/hook",
          allowed_origins: ["https://a.example.com"],
          allowed_ips: ["10.0.0.0/8"]
        })
        expect(created.pipeline_id).toBe(pipeline.id)
        const r = yield* put(alice, `/api/user/channels/${created.id}`, { callback_url: null, pipeline_id: null })
        expect(ok(r, "channels.update")).toMatchObject({
          callback_url: null,
          pipeline_id: null,
          allowed_origins: ["https://a.example.com"],
          allowed_ips: ["10.0.0.0/8"],
          is_active: true
        })
        const emptied = yield* put(alice, `/api/user/channels/${created.id}`, { allowed_origins: [], allowed_ips: [] })
        expect(ok(emptied, "channels.update")).toMatchObject({ allowed_origins: [], allowed_ips: [] })
      }))

    it.effect("origins are normalised: trailing slash dropped, lower case, duplicates removed", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const created = yield* createChannel(alice, {
          kind: "web",
          allowed_origins: ["https://shop.example.com/", "HTTPS://Shop.Example.com", "https://shop.example.com:8443"]
        })
        expect(created.allowed_origins).toEqual(["https://shop.example.com", "https://shop.example.com:8443"])
      }))

    it.effect("a bad callback_url is 422 on callback_url, on create and on update", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        for (const callback_url of ["not a url", "ftp://example.com/hook", "javascript:alert(1)"]) {
          const r = yield* post(alice, "/api/user/channels", { kind: "web", callback_url })
          expect422(r, ["callback_url"])
          expect(failure(r).validation[0]!.message).toContain("http or https URL")
        }
        const created = yield* createChannel(alice, { kind: "web", callback_url: "https://ok.example.com" })
        expect422(yield* put(alice, `/api/user/channels/${created.id}`, { callback_url: "mailto:me@example.com" }), [
          "callback_url"
        ])
        expect(ok(yield* get(alice, `/api/user/channels/${created.id}`), "channels.get").callback_url).toBe(
          "https://ok.example.com"
        )
        expect(ok(yield* get(alice, "/api/user/channels"), "channels.list")).toHaveLength(1)
      }))

    it.effect("a callback_url at a loopback, private, link-local or metadata address is 422 on callback_url, on create and on update", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        // WHATWG parsing normalises the spellings before the check: 127.1 and 0x7f000001 are 127.0.0.1
        for (
          const [callback_url, host] of [
            ["http://127.1/hook", "127.0.0.1"],
            ["http://0x7f000001:8080/hook", "127.0.0.1"],
            ["http://2130706433/hook", "127.0.0.1"],
            ["http://[::ffff:127.0.0.1]/hook", "::ffff:7f00:1"],
            ["http://[::1]:3000/hook", "::1"],
            ["http://169.254.169.254/latest/meta-data/", "169.254.169.254"],
            ["https://10.0.0.8/hook", "10.0.0.8"],
            ["http://192.168.1.20/hook", "192.168.1.20"],
            ["http://100.64.0.1/hook", "100.64.0.1"],
            ["http://0.0.0.0:3000/hook", "0.0.0.0"],
            ["http://[fd00::1]/hook", "fd00::1"],
            ["http://[fe80::1]/hook", "fe80::1"],
            ["http://localhost:3000/hook", "localhost"],
            ["http://app.localhost/hook", "app.localhost"]
          ] as const
        ) {
          const r = yield* post(alice, "/api/user/channels", { kind: "web", callback_url })
          expect422(r, ["callback_url"])
          expect(failure(r).validation[0]!.message).toBe(
            `The callback_url field must point at a public address: ${host} is a loopback, private or link-local address, ` +
              "which this server calls only when OUTBOUND_ALLOW_PRIVATE=true."
          )
        }
        const created = yield* createChannel(alice, { kind: "web", callback_url: "https://hooks.example.com/parley" })
        expect422(yield* put(alice, `/api/user/channels/${created.id}`, { callback_url: "http://127.0.0.1:9/hook" }), [
          "callback_url"
        ])
        expect(ok(yield* get(alice, `/api/user/channels/${created.id}`), "channels.get").callback_url).toBe(
          "https://hooks.example.com/parley"
        )
        // an update that leaves callback_url alone is not checked again
        expect((yield* put(alice, `/api/user/channels/${created.id}`, { name: "Renamed" })).status).toBe(200)
      }))

    it.effect("public addresses and host names are accepted as callback_url", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        for (
          const callback_url of [
            "http://8.8.8.8/hook",
            "http://[::ffff:8.8.8.8]/hook",
            "https://[2001:4860:4860::8888]/hook",
            "https://hooks.example.com/parley"
          ]
        ) {
          const created = yield* createChannel(alice, { kind: "web", callback_url })
          expect(created.callback_url).toBe(callback_url)
        }
      }))

    it.effect("a bad origin is 422 naming the allowed_origins entry", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const r = yield* post(alice, "/api/user/channels", {
          kind: "web",
          allowed_origins: ["https://good.example.com", "https://shop.example.com/path"]
        })
        expect422(r, ["allowed_origins.1"])
        expect(failure(r).validation[0]!.message).toContain("must be an origin")
        expect422(yield* post(alice, "/api/user/channels", { kind: "web", allowed_origins: ["shop.example.com"] }), [
          "allowed_origins.0"
        ])
        const created = yield* createChannel(alice, { kind: "web" })
        expect422(yield* put(alice, `/api/user/channels/${created.id}`, { allowed_origins: ["*"] }), [
          "allowed_origins.0"
        ])
        expect422(yield* put(alice, `/api/user/channels/${created.id}`, { allowed_origins: "https://a.example.com" }), [
          "allowed_origins"
        ])
      }))

    it.effect("a bad IP or CIDR is 422 naming the allowed_ips entry", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        expect422(yield* post(alice, "/api/user/channels", { kind: "web", allowed_ips: ["10.0.0.0/33"] }), [
          "allowed_ips.0"
        ])
        expect422(yield* post(alice, "/api/user/channels", { kind: "web", allowed_ips: ["10.0.0.1", "999.1.1.1"] }), [
          "allowed_ips.1"
        ])
        const created = yield* createChannel(alice, { kind: "web" })
        const r = yield* put(alice, `/api/user/channels/${created.id}`, {
          allowed_ips: ["2001:db8::/129", "10.0.0.0/"]
        })
        expect422(r, ["allowed_ips.0", "allowed_ips.1"])
        expect(failure(r).validation[0]!.message).toContain("CIDR")
        expect(ok(yield* get(alice, `/api/user/channels/${created.id}`), "channels.get").allowed_ips).toEqual([])
      }))

    it.effect("an unknown or missing kind is 422 on kind", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        expect422(yield* post(alice, "/api/user/channels", { kind: "fax" }), ["kind"])
        expect422(yield* post(alice, "/api/user/channels", { name: "No kind" }), ["kind"])
        expect422(yield* post(alice, "/api/user/channels", { kind: "web", name: "  " }), ["name"])
      }))

    it.effect("a pipeline of another workspace is 422 on pipeline_id, on create and on update", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const bob = yield* seedUser()
        const bobs = yield* createPipeline(bob, "Bob's")
        const r = yield* post(alice, "/api/user/channels", { kind: "web", pipeline_id: bobs.id })
        expect422(r, ["pipeline_id"])
        expect(failure(r).validation[0]!.message).toBe("The selected pipeline does not exist.")
        expect422(yield* post(alice, "/api/user/channels", { kind: "web", pipeline_id: 987654 }), ["pipeline_id"])
        const created = yield* createChannel(alice, { kind: "web" })
        expect422(yield* put(alice, `/api/user/channels/${created.id}`, { pipeline_id: bobs.id }), ["pipeline_id"])
        expect(ok(yield* get(alice, `/api/user/channels/${created.id}`), "channels.get").pipeline_id).toBeNull()
        expect(ok(yield* get(bob, `/api/user/pipelines/${bobs.id}`), "pipelines.get").channel_id).toBeNull()
      }))

    it.effect("creating a channel in a workspace the caller is not a member of is 422 on workspace_id", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const bob = yield* seedUser()
        expect422(yield* post(alice, "/api/user/channels", { kind: "web", workspace_id: bob.workspace_id }), [
          "workspace_id"
        ])
        expect(ok(yield* get(bob, "/api/user/channels"), "channels.list")).toEqual([])
      }))
  })

  describe("tenancy and scopes", () => {
    it.effect("another workspace's channel is 404 like a missing one for GET, PUT and rotate", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const mallory = yield* seedUser()
        const created = yield* createChannel(alice, { kind: "web", name: "Private" })
        const notFound = { status: false, code: 404, validation: [], message: "Channel not found.", data: null }
        for (
          const r of [
            yield* get(mallory, `/api/user/channels/${created.id}`),
            yield* put(mallory, `/api/user/channels/${created.id}`, { name: "Pwned", is_active: false }),
            yield* post(mallory, `/api/user/channels/${created.id}/rotate`),
            yield* get(mallory, "/api/user/channels/987654321")
          ]
        ) {
          expect(r.status).toBe(404)
          expect(r.body).toEqual(notFound)
        }
        expect(ok(yield* get(mallory, "/api/user/channels"), "channels.list")).toEqual([])
        const got = yield* get(alice, `/api/user/channels/${created.id}`)
        expect(ok(got, "channels.get")).toMatchObject({
          name: "Private",
          is_active: true,
          client_id: created.client_id
        })
      }))

    it.effect("a manager sees and edits the managed workspace's channels", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const manager = yield* seedUser()
        const created = yield* createChannel(owner, { kind: "web" })
        yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, owner.workspace_id))
        const list = yield* get(manager, "/api/user/channels")
        expect(ok(list, "channels.list").map((c) => c.id)).toEqual([created.id])
        const updated = yield* put(manager, `/api/user/channels/${created.id}`, { is_active: false })
        expect(ok(updated, "channels.update").is_active).toBe(false)
      }))

    it.effect("channels:read lists and reads channels but cannot create, update or rotate", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const created = yield* createChannel(alice, { kind: "web" })
        const reader = yield* tokenFor(alice.email, ["channels:read"])
        const r = { token: reader.token }
        expect((yield* get(r, "/api/user/channels")).status).toBe(200)
        expect((yield* get(r, `/api/user/channels/${created.id}`)).status).toBe(200)
        for (
          const denied of [
            yield* post(r, "/api/user/channels", { kind: "web" }),
            yield* put(r, `/api/user/channels/${created.id}`, { is_active: false }),
            yield* post(r, `/api/user/channels/${created.id}/rotate`)
          ]
        ) {
          expect(denied.status).toBe(403)
          expect(denied.body).toEqual({
            status: false,
            code: 403,
            validation: [],
            message: "Missing required scope: channels:write",
            data: null
          })
        }
        const after = yield* get(alice, `/api/user/channels/${created.id}`)
        expect(ok(after, "channels.get")).toMatchObject({ is_active: true, client_id: created.client_id })
        expect(ok(yield* get(alice, "/api/user/channels"), "channels.list")).toHaveLength(1)
      }))

    it.effect("channels:write creates a channel but cannot read channels", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser({ scopes: ["channels:write"] })
        const created = yield* post(alice, "/api/user/channels", { kind: "web" })
        expect(created.status).toBe(200)
        for (
          const r of [
            yield* get(alice, "/api/user/channels"),
            yield* get(alice, `/api/user/channels/${ok(created, "channels.create").id}`)
          ]
        ) {
          expect(r.status).toBe(403)
          expect(failure(r).message).toBe("Missing required scope: channels:read")
        }
      }))

    it.effect("pipeline scopes do not grant channel access", () =>
      Effect.gen(function*() {
        const alice = yield* seedUser({ scopes: ["pipelines:read", "pipelines:write"] })
        const list = yield* get(alice, "/api/user/channels")
        expect(list.status).toBe(403)
        expect(failure(list).message).toBe("Missing required scope: channels:read")
        const create = yield* post(alice, "/api/user/channels", { kind: "web" })
        expect(create.status).toBe(403)
        expect(failure(create).message).toBe("Missing required scope: channels:write")
      }))

    it.effect("channels without a token are 401", () =>
      Effect.gen(function*() {
        const r = yield* call("/api/user/channels")
        expect(r.status).toBe(401)
        expect(r.body).toMatchObject({ status: false, code: 401, validation: [], data: null })
      }))
  })
})

layer(TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true" }))("channels with OUTBOUND_ALLOW_PRIVATE", (it) => {
  it.effect("a loopback or private callback_url is saved", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* createChannel(alice, { kind: "web", callback_url: "http://127.0.0.1:4000/hook" })
      expect(created.callback_url).toBe("http://127.0.0.1:4000/hook")
      const updated = yield* put(alice, `/api/user/channels/${created.id}`, { callback_url: "http://10.0.0.8/hook" })
      expect(ok(updated, "channels.update").callback_url).toBe("http://10.0.0.8/hook")
    }))
})
