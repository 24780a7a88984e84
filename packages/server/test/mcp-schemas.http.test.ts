/**
 * What tools/list tells a model (issue 23): portable input schemas with a description on every parameter
 * at every depth, SPEC.md's constraints and defaults, the hints, and refusals that name the parameter
 * rather than print its description.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  type JsonSchema,
  jsonSchema,
  mcpSession as connect,
  propertyOf,
  textOf,
  toolError
} from "./support/McpClient.js"
import { seedUser, TestServerLive } from "./support/TestServer.js"

layer(TestServerLive(), { excludeTestServices: true })("MCP tool schemas", (it) => {
  it.scoped("input schemas are portable and say what each parameter means, with SPEC.md's constraints", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const mcp = yield* connect(owner.token)
      const { tools } = yield* Effect.promise(() => mcp.client.listTools())
      const problems: Array<string> = []
      const check = (tool: string, path: string, schema: JsonSchema) => {
        for (const [name, property] of Object.entries(schema.properties ?? {})) {
          const at = `${tool}: ${path}${name}`
          // a sentence a person wrote, not Effect's "a string that will be trimmed" or an internal title
          if (
            typeof property.description !== "string" || property.description.length < 8 ||
            /^an? [a-z]/.test(property.description)
          ) {
            problems.push(`${at} has no description`)
          }
          const typed = property.type ?? property.anyOf?.every((b) => b.type !== undefined)
          if (!typed) problems.push(`${at} has no type`)
          if (property.items) check(tool, `${path}${name}[].`, property.items)
          for (const branch of property.anyOf ?? []) if (branch.items) check(tool, `${path}${name}[].`, branch.items)
          check(tool, `${path}${name}.`, property)
        }
      }
      for (const t of tools) {
        check(t.name, "", jsonSchema(t.inputSchema))
        const text = JSON.stringify([t.inputSchema, t.outputSchema])
        for (
          const word of [
            "\"$ref\"",
            "\"$defs\"",
            "\"allOf\"",
            "\"title\"",
            "\"$id\"",
            "character(s)",
            "that will be trimmed",
            "9007199254740991"
          ]
        ) {
          if (text.includes(word)) problems.push(`${t.name} has ${word}`)
        }
      }
      expect(problems).toEqual([])

      const input = (tool: string) => jsonSchema(tools.find((t) => t.name === tool)!.inputSchema)
      const param = (tool: string, name: string) => propertyOf(input(tool), name)
      // SPEC.md 4.5 and 8, as the runtime enforces them
      expect(param("create_pipeline", "followup_limit")).toMatchObject({
        type: "integer",
        minimum: 1,
        default: 6
      })
      expect(param("create_pipeline", "is_unknown_contacts_enabled")).toMatchObject({
        type: "boolean",
        default: true
      })
      expect(param("create_pipeline", "is_model_routing")).toMatchObject({
        type: "array",
        minItems: 4,
        maxItems: 4
      })
      expect(param("create_pipeline", "model_temperature")).toMatchObject({ minimum: 0.1, maximum: 1 })
      expect(param("create_pipeline", "max_conversation_messages")).toMatchObject({
        type: "integer",
        minimum: 1
      })
      expect(param("create_variable", "data_type")).toMatchObject({
        enum: ["string", "integer", "boolean", "float"],
        default: "string"
      })
      expect(param("create_variable", "name")).toMatchObject({ pattern: "^[A-Za-z0-9_]+$" })
      expect(param("create_action", "name")).toMatchObject({ type: "string", minLength: 1, maxLength: 255 })
      expect(param("create_action", "retries")).toMatchObject({ minimum: 1, maximum: 10 })
      expect(param("create_stage", "name")).toMatchObject({ minLength: 3 })
      expect(param("create_stage", "enter_condition")).toMatchObject({ type: "string", minLength: 20 })
      expect(param("create_followup", "intervals")).toMatchObject({ minItems: 1, maxItems: 100 })
      expect(propertyOf(param("create_followup", "intervals").items, "interval_value")).toMatchObject({
        minimum: 1,
        maximum: 100
      })
      expect(param("upsert_knowledge_points", "points")).toMatchObject({
        minItems: 1,
        items: { type: "object", required: ["default_id"] }
      })
      expect(propertyOf(param("create_knowledge_table", "columns").items, "is_retrievable")).toMatchObject({
        default: true
      })
      // the same field on update has no default: omitted means unchanged
      expect(param("update_pipeline", "followup_limit").default).toBeUndefined()
      // null clears a field on update; on a create it is the same as leaving the argument out, so it is not offered
      expect(param("update_pipeline", "max_conversation_messages").anyOf).toEqual([{
        type: "integer",
        minimum: 1
      }, { type: "null" }])
      expect(JSON.stringify(tools.filter((t) => t.name.startsWith("create_")).map((t) => t.inputSchema))).not.toContain(
        "\"null\""
      )
      // ids carry no bounds (they come from results), free text no storage limit, and unknown keys are refused without
      // saying so
      expect(param("create_stage", "pipeline_id")).toEqual({ type: "integer", description: expect.any(String) })
      expect(param("update_pipeline", "instructions").anyOf?.[0]).toEqual({ type: "string" })
      expect(
        tools.filter((t) => JSON.stringify(t.inputSchema).includes("\"additionalProperties\":false")).map((t) => t.name)
      )
        .toEqual(tools.filter((t) => Object.keys(t.inputSchema.properties ?? {}).length === 0).map((t) => t.name))

      // a hint is published only where it differs from MCP's default, so read them with the defaults
      const defaults = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }
      const hints = new Map(tools.map((t) => [t.name, { ...defaults, ...t.annotations }]))
      for (const t of tools) {
        for (const [hint, value] of Object.entries(t.annotations ?? {})) {
          expect(value, `${t.name}.${hint}`).not.toBe(defaults[hint as keyof typeof defaults])
        }
      }
      expect(hints.get("start_pipeline_journey")).toMatchObject({ readOnlyHint: true })
      expect(hints.get("list_pipelines")).toMatchObject({ readOnlyHint: true, openWorldHint: false })
      expect(hints.get("create_stage")).toMatchObject({
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false
      })
      for (const name of tools.map((t) => t.name).filter((n) => n.startsWith("update_") || n.startsWith("delete_"))) {
        expect(hints.get(name)).toMatchObject({ readOnlyHint: false, destructiveHint: true })
      }
      expect(hints.get("update_opportunities")).toMatchObject({ openWorldHint: true })
    }))

  it.scoped("a wrong value for any parameter of any tool is refused naming that parameter, never printing its description", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const mcp = yield* connect(owner.token)
      const { tools } = yield* Effect.promise(() => mcp.client.listTools())
      const wrongFor = (schema: JsonSchema): unknown => {
        const type = schema.type ?? schema.anyOf?.[0]?.type
        return type === "string" ? 12_345 : "not-of-this-type"
      }
      let checked = 0
      for (const t of tools) {
        for (const [name, property] of Object.entries(jsonSchema(t.inputSchema).properties ?? {})) {
          const refused = yield* mcp.call(t.name, { [name]: wrongFor(property) })
          expect(refused.isError, `${t.name}.${name}`).toBe(true)
          const issue = toolError(refused).validation?.find((v) => v.field === name)
          expect(issue, `${t.name}.${name}: ${textOf(refused)}`).toBeDefined()
          expect(issue!.message, `${t.name}.${name}`).not.toContain(property.description)
          expect(textOf(refused)).toContain(`- ${name}: `)
          checked++
        }
      }
      expect(checked).toBeGreaterThan(200)
    }))
})
