/**
 * One MCP tool: name, description, input schema (an Effect Schema, published as portable JSON Schema), output
 * schema, the scope it needs beyond `mcp:use`, hints, and a handler against the `McpBackend` port. Calling a
 * tool never fails: refusals, bad arguments and service errors are tool results with `isError: true`
 * (SPEC.md 5.3). A result is `structuredContent` and the same JSON, compact, as its one text block.
 */
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js"
import {
  CurrentActor,
  findUnstorableText,
  hasScope,
  issuesToValidation,
  missingScopeMessage,
  type Scope,
  unstorableMessage,
  ValidationIssue
} from "@parley/domain"
import { Effect, ParseResult, Schema } from "effect"
import type { BackendFailure, McpBackend } from "./Backend.js"
import { inputSchemaOf, type JsonObjectSchema } from "./JsonSchema.js"

export type ToolGroup = "analytics" | "discover" | "build" | "update"

export interface Tool {
  readonly name: string
  readonly title: string
  readonly group: ToolGroup
  readonly description: string
  /** The scope a token needs for this tool besides `mcp:use`. */
  readonly scope: Scope | undefined
  readonly inputSchema: JsonObjectSchema
  readonly outputSchema: JsonObjectSchema
  readonly annotations: ToolAnnotations
  readonly call: (args: unknown) => Effect.Effect<CallToolResult, never, McpBackend | CurrentActor>
}

/** Plain JSON (class instances and brands gone), as `structuredContent` must be. */
const plain = (value: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(value)) as Record<string, unknown>

export const toolError = (message: string, structured: Record<string, unknown>): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: message }],
  structuredContent: plain(structured)
})

/** One line per bad argument under one heading: the message already says what is wrong with it. */
const validationError = (tool: string, validation: ReadonlyArray<ValidationIssue>, message: string): CallToolResult =>
  toolError(
    `Invalid arguments for ${tool}:\n${
      validation.map((v) => `- ${v.field === "" ? "arguments" : v.field}: ${v.message}`).join("\n")
    }`,
    { error: "validation", message, validation }
  )

/** A named 404 (`PipelineNotFound`) is `NotFound` to a client, as on the REST API's envelope. */
const wireTag = (failure: BackendFailure): string => failure._tag.endsWith("NotFound") ? "NotFound" : failure._tag

const failureResult = (tool: string, failure: BackendFailure): CallToolResult =>
  failure._tag === "Unprocessable" && failure.validation.length > 0
    ? validationError(tool, failure.validation, failure.message)
    : toolError(failure.message, { error: wireTag(failure), message: failure.message })

export interface ToolDefinition<A, I> {
  readonly name: string
  readonly title: string
  readonly group: ToolGroup
  readonly description: string
  readonly scope?: Scope
  readonly input: Schema.Schema<A, I, never>
  readonly output: JsonObjectSchema
  /** Defaults: analytics and discover tools read only; update tools overwrite (destructive) and are idempotent. */
  readonly readOnly?: boolean
  readonly destructive?: boolean
  readonly idempotent?: boolean
  /** The call may reach outside Parley (a contact, an action's webhook). */
  readonly openWorld?: boolean
  readonly run: (input: A) => Effect.Effect<Record<string, unknown>, BackendFailure, McpBackend | CurrentActor>
}

/**
 * The hints that differ from MCP's defaults (`readOnlyHint` false, `destructiveHint` true, `idempotentHint`
 * false, `openWorldHint` true): a hint equal to its default says nothing a client does not assume already.
 */
const annotationsOf = (def: ToolDefinition<any, any>): ToolAnnotations => {
  const readOnly = def.readOnly ?? (def.group === "analytics" || def.group === "discover")
  const destructive = !readOnly && (def.destructive ?? def.group === "update")
  const idempotent = !readOnly && (def.idempotent ?? def.group === "update")
  const openWorld = def.openWorld ?? false
  return {
    ...(readOnly ? { readOnlyHint: true } : {}),
    ...(readOnly || destructive ? {} : { destructiveHint: false }),
    ...(idempotent ? { idempotentHint: true } : {}),
    ...(openWorld ? {} : { openWorldHint: false })
  }
}

/** A tool that creates: leaving an argument out and sending null make the same record. */
const creates = (def: ToolDefinition<any, any>) => def.group === "build" && def.readOnly !== true

export const tool = <A, I>(def: ToolDefinition<A, I>): Tool => {
  const decode = Schema.decodeUnknown(def.input, { errors: "all", onExcessProperty: "error" })
  return {
    name: def.name,
    title: def.title,
    group: def.group,
    description: def.description,
    scope: def.scope,
    inputSchema: inputSchemaOf(def.input, { nullable: !creates(def) }),
    outputSchema: def.output,
    annotations: annotationsOf(def),
    call: (args) =>
      Effect.gen(function*() {
        const actor = yield* CurrentActor
        if (def.scope !== undefined && !hasScope(actor.scopes, def.scope)) {
          const message = missingScopeMessage(def.scope)
          return toolError(message, { error: "Forbidden", message, scope: def.scope })
        }
        const unstorable = findUnstorableText(args)
        if (unstorable) {
          const field = unstorable.field === "" ? "arguments" : unstorable.field
          const message = `The ${field} argument ${unstorableMessage(unstorable.reason)}.`
          return validationError(def.name, [new ValidationIssue({ field, message })], message)
        }
        const decoded = yield* Effect.either(decode(args ?? {}))
        if (decoded._tag === "Left") {
          const validation = issuesToValidation(ParseResult.ArrayFormatter.formatErrorSync(decoded.left))
          return validationError(def.name, validation, validation[0]?.message ?? "Invalid arguments.")
        }
        return yield* def.run(decoded.right).pipe(
          Effect.map((out): CallToolResult => {
            const structured = plain(out)
            return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured }
          }),
          Effect.catchAll((failure) => Effect.succeed(failureResult(def.name, failure)))
        )
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError(`MCP tool ${def.name} failed`, cause).pipe(
            Effect.as(
              toolError(`${def.name} failed unexpectedly; the error was logged.`, {
                error: "InternalError",
                message: "Internal error"
              })
            )
          )
        ),
        Effect.withSpan(`McpTool.${def.name}`)
      )
  }
}
