/**
 * One MCP tool: name, description, input schema (an Effect Schema, published as JSON Schema), the scope
 * it needs beyond `mcp:use`, and a handler against the `McpBackend` port. Calling a tool never fails:
 * refusals, bad arguments and service errors are tool results with `isError: true` (SPEC.md 5.3).
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import {
  CurrentActor,
  findUnstorableText,
  issuesToValidation,
  missingScopeMessage,
  type Scope,
  unstorableMessage,
  ValidationIssue
} from "@parley/domain"
import { Effect, JSONSchema, ParseResult, Schema } from "effect"
import * as AST from "effect/SchemaAST"
import type { BackendFailure, McpBackend } from "./Backend.js"

export type ToolGroup = "analytics" | "discover" | "build" | "update"

/** What a handler answers: the structured result and a one-line summary for people reading the text. */
export interface ToolOutput {
  readonly structured: Record<string, unknown>
  readonly summary: string
}

export interface JsonObjectSchema {
  readonly type: "object"
  readonly properties?: Record<string, unknown>
  readonly required?: ReadonlyArray<string>
  readonly [key: string]: unknown
}

export interface Tool {
  readonly name: string
  readonly title: string
  readonly group: ToolGroup
  readonly description: string
  /** The scope a token needs for this tool besides `mcp:use`. */
  readonly scope: Scope | undefined
  readonly inputSchema: JsonObjectSchema
  readonly readOnly: boolean
  readonly destructive: boolean
  readonly call: (args: unknown) => Effect.Effect<CallToolResult, never, McpBackend | CurrentActor>
}

/** Plain JSON (class instances and brands gone), as `structuredContent` must be. */
const plain = (value: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(value)) as Record<string, unknown>

const textOf = (summary: string, structured: Record<string, unknown>) => `${summary}\n\n${JSON.stringify(structured, null, 2)}`

export const toolError = (message: string, structured: Record<string, unknown>): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: message }],
  structuredContent: plain(structured)
})

const validationError = (validation: ReadonlyArray<ValidationIssue>, what: string): CallToolResult =>
  toolError(
    `${what}:\n${validation.map((v) => `- ${v.field === "" ? "arguments" : v.field}: ${v.message}`).join("\n")}`,
    { error: "validation", message: validation[0]?.message ?? what, validation }
  )

const failureResult = (failure: BackendFailure): CallToolResult =>
  failure._tag === "Unprocessable"
    ? validationError(failure.validation, failure.message)
    : toolError(failure.message, { error: failure._tag, message: failure.message })

/** The JSON Schema of a tool's arguments: always a top-level object, definitions inline under `$defs`. */
const jsonSchemaOf = (schema: Schema.Schema.Any): JsonObjectSchema => {
  // JSON Schema renders an empty struct as "any object or array"; a tool without parameters takes `{}`
  const ast = schema.ast
  if (AST.isTypeLiteral(ast) && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) {
    return { type: "object", properties: {}, additionalProperties: false }
  }
  const { $schema: _, ...json } = JSONSchema.make(schema) as unknown as JsonObjectSchema & { $schema?: string }
  if (json.type !== "object") throw new Error(`an MCP tool's input schema must be an object, got ${JSON.stringify(json).slice(0, 80)}`)
  return json
}

export interface ToolDefinition<A, I> {
  readonly name: string
  readonly title: string
  readonly group: ToolGroup
  readonly description: string
  readonly scope?: Scope
  readonly input: Schema.Schema<A, I, never>
  readonly destructive?: boolean
  readonly run: (input: A) => Effect.Effect<ToolOutput, BackendFailure, McpBackend | CurrentActor>
}

export const tool = <A, I>(def: ToolDefinition<A, I>): Tool => {
  const decode = Schema.decodeUnknown(def.input, { errors: "all", onExcessProperty: "error" })
  return {
    name: def.name,
    title: def.title,
    group: def.group,
    description: def.description,
    scope: def.scope,
    inputSchema: jsonSchemaOf(def.input),
    readOnly: def.group === "analytics" || def.group === "discover",
    destructive: def.destructive ?? false,
    call: (args) =>
      Effect.gen(function*() {
        const actor = yield* CurrentActor
        if (def.scope !== undefined && !actor.scopes.includes(def.scope)) {
          const message = missingScopeMessage(def.scope)
          return toolError(message, { error: "Forbidden", message, scope: def.scope })
        }
        const unstorable = findUnstorableText(args)
        if (unstorable) {
          const field = unstorable.field === "" ? "arguments" : unstorable.field
          return validationError([new ValidationIssue({ field, message: `The ${field} argument ${unstorableMessage(unstorable.reason)}.` })], `Invalid arguments for ${def.name}`)
        }
        const decoded = yield* Effect.either(decode(args ?? {}))
        if (decoded._tag === "Left") {
          const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
          return validationError(issuesToValidation(issues), `Invalid arguments for ${def.name}`)
        }
        return yield* def.run(decoded.right).pipe(
          Effect.map((out): CallToolResult => {
            const structured = plain(out.structured)
            return { content: [{ type: "text", text: textOf(out.summary, structured) }], structuredContent: structured }
          }),
          Effect.catchAll((failure) => Effect.succeed(failureResult(failure)))
        )
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError(`MCP tool ${def.name} failed`, cause).pipe(
            Effect.as(toolError(`${def.name} failed unexpectedly; the error was logged.`, { error: "InternalError", message: "Internal error" }))
          )
        ),
        Effect.withSpan(`McpTool.${def.name}`)
      )
  }
}

export const output = (structured: Record<string, unknown>, summary: string): ToolOutput => ({ structured, summary })
