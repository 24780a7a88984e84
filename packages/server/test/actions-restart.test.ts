/**
 * An action run is durable: the target fails attempt 1 with a 503, the server is killed hard (SIGKILL)
 * during the backoff before attempt 2, and a second `parley serve` on the same database (the data dir's
 * embedded one, or DATABASE_URL in the postgres project) makes attempt 2, once, and records the run as
 * succeeded with both attempts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  call,
  childDatabase,
  crash,
  type Running,
  serve,
  sleep,
  startReceiver,
  stop,
  until
} from "./support/ChildServer.js"
import { type EndpointKey, ok } from "./support/Contract.js"

/** Attempt 2 is due 8 s (±20 %) after attempt 1: long enough for the kill to land inside the wait. */
const BASE_MS = 8_000

describe("action runs across a process restart", () => {
  it(
    "a SIGKILL during the backoff before attempt 2 does not lose the run: the restarted server makes attempt 2, once",
    async () => {
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-actions-restart-"))
      const database = await childDatabase(dataDir)
      const receiver = await startReceiver((_, hits) =>
        hits.length === 1 ? { status: 503, body: "unavailable" } : { status: 200, body: JSON.stringify({ ok: true }) }
      )
      let first: Running | undefined
      let second: Running | undefined
      const env = { ...database.env, ACTION_RETRY_BASE_MS: String(BASE_MS), ENGINE_SWEEP_INTERVAL_MS: "2000" }
      try {
        first = await serve(dataDir, env)
        const { token } = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as {
          token: string
        }
        const post = async <K extends EndpointKey>(api: string, path: string, key: K, body: unknown) => {
          const r = await call(`${api}${path}`, { token, method: "POST", json: body })
          expect(r.status).toBe(200)
          return ok(r, key)
        }
        const pipeline = await post(first.api, "/api/user/pipelines", "pipelines.create", {
          name: "Restart",
          agent_type_id: 1,
          ai_model_id: 1,
          language_id: 1
        })
        await post(first.api, `/api/user/pipelines/${pipeline.id}/stages`, "pipelines.createStage", {
          name: "Open",
          nature: "neutral",
          order: 1
        })
        await post(first.api, `/api/user/pipelines/${pipeline.id}/actions`, "automation.createAction", {
          name: "durable",
          method: "POST",
          url: receiver.url,
          is_active: true,
          fixed_trigger: "stage_started",
          retries: 1,
          payload: { hello: "world" }
        })
        await post(first.api, "/api/user/opportunities", "opportunities.create", {
          pipeline_id: pipeline.id,
          contact: { email: "restart@example.com" }
        })

        const runs = async (api: string) => {
          const r = await call(`${api}/api/user/pipelines/${pipeline.id}/action-results`, { token })
          expect(r.status).toBe(200)
          return ok(r, "automation.actionResults")
        }
        await until("attempt 1 at the target", () => receiver.hits.length >= 1 ? true : undefined, 20_000)
        const attempt1At = receiver.hits[0]!.at
        await until(
          "attempt 1 recorded",
          async () => (await runs(first!.api))[0]?.attempts.length === 1 ? true : undefined,
          5_000
        )
        await sleep(Math.max(0, attempt1At + 2_000 - Date.now()))
        expect(receiver.hits).toHaveLength(1)
        await crash(first, dataDir)
        first = undefined

        second = await serve(dataDir, env)
        await until(
          "attempt 2 at the target after the restart",
          () => receiver.hits.length >= 2 ? true : undefined,
          30_000
        )
        expect(JSON.parse(receiver.hits[1]!.rawBody)).toEqual({ hello: "world" })
        const [run] = await until("the run succeeded", async () => {
          const rows = await runs(second!.api)
          return rows[0]?.status === "succeeded" ? rows : undefined
        }, 10_000)
        expect(run!.attempts.map((a) => [a.attempt, a.status_code])).toEqual([[1, 503], [2, 200]])
        await sleep(2_000)
        expect(receiver.hits).toHaveLength(2)
      } finally {
        await stop(first)
        await stop(second)
        await receiver.close()
        await database.drop()
        Fs.rmSync(dataDir, { recursive: true, force: true })
      }
    },
    120_000
  )
})
