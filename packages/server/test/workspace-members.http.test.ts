/** `GET /api/user/workspaces/{workspace}/members`: the people of a workspace the caller reaches. */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Identity } from "../src/identity/Identity.js"
import { expect422, expectStatus, get, ok, sqlRows } from "./support/Opportunities.js"
import { call, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

const grantManager = (email: string, workspaceId: number) =>
  Effect.flatMap(Identity, (identity) => identity.grantManager(email, workspaceId as never)).pipe(Effect.orDie)

const rename = (userId: number, name: string) => sqlRows`update users set name = ${name} where id = ${userId}`

const members = (workspaceId: number) => `/api/user/workspaces/${workspaceId}/members`

layer(TestServerLive())("workspace members", (it) => {
  it.effect("lists the owner first, then the managers by name, with their email and role", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const ben = yield* seedUser()
      const ana = yield* seedUser()
      yield* rename(owner.user_id, "Zoe Owner")
      yield* rename(ben.user_id, "Ben Manager")
      yield* rename(ana.user_id, "Ana Manager")
      yield* grantManager(ben.email, owner.workspace_id)
      yield* grantManager(ana.email, owner.workspace_id)

      const r = yield* get(owner, members(owner.workspace_id))
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ status: true, code: 200, validation: [], message: "OK" })
      const listed = ok(r, "workspaces.members")
      expect(listed).toEqual([
        { id: owner.user_id, name: "Zoe Owner", email: owner.email, role: "owner" },
        { id: ana.user_id, name: "Ana Manager", email: ana.email, role: "manager" },
        { id: ben.user_id, name: "Ben Manager", email: ben.email, role: "manager" }
      ])
      // a manager reads the managed workspace's members too, and their own workspace's
      expect(ok(yield* get(ana, members(owner.workspace_id)), "workspaces.members")).toEqual(listed)
      expect(ok(yield* get(ana, members(ana.workspace_id)), "workspaces.members")).toEqual([
        { id: ana.user_id, name: "Ana Manager", email: ana.email, role: "owner" }
      ])
    }))

  it.effect("a workspace the caller does not reach, or that does not exist, is 404 Workspace not found.", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      for (const id of [bob.workspace_id, 987654321]) {
        const r = yield* get(alice, members(id))
        expect(r.status).toBe(404)
        expect(r.body).toEqual({
          status: false,
          code: 404,
          validation: [],
          message: "Workspace not found.",
          data: null
        })
      }
    }))

  it.effect("needs conversations:read (403 without it, 401 without a token); a bad workspace id is 422 naming workspace", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const writer = yield* tokenFor(alice.email, ["conversations:write", "opportunities:read"])
      expectStatus(
        yield* get({ token: writer.token }, members(alice.workspace_id)),
        403,
        "Missing required scope: conversations:read"
      )
      const reader = yield* tokenFor(alice.email, ["conversations:read"])
      expect(ok(yield* get({ token: reader.token }, members(alice.workspace_id)), "workspaces.members")).toHaveLength(1)
      expectStatus(yield* call(members(alice.workspace_id)), 401)
      for (const bad of ["abc", "0", "-1", "1.5", "01"]) {
        expect422(yield* get(alice, `/api/user/workspaces/${bad}/members`), ["workspace"])
      }
    }))
})
