import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, seedUser, TestServerLive } from "./support/TestServer.js"

const validPipeline = (name: string) => ({ name, agent_type_id: 1, ai_model_id: 1, language_id: 1 })

layer(TestServerLive())("pipelines and stages over REST", (it) => {
  it.effect("creates, lists and retrieves a pipeline with defaults", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* call("/api/user/pipelines", { method: "POST", token: alice.token, body: validPipeline("Sales") })
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
      expect(created.body.data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
      const list = yield* call("/api/user/pipelines", { token: alice.token })
      expect(list.body.data.map((p: any) => p.name)).toEqual(["Sales"])
      const got = yield* call(`/api/user/pipelines/${created.body.data.id}`, { token: alice.token })
      expect(got.body.data.id).toBe(created.body.data.id)
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
      expect(r.body.status).toBe(false)
      expect(r.body.code).toBe(422)
      expect(r.body.data).toBeNull()
      const fields = r.body.validation.map((v: any) => v.field).sort()
      expect(fields).toEqual(["agent_type_id", "ai_model_id", "model_temperature", "name", "rag_mode"])
    }))
})
