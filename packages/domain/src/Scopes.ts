import { Schema } from "effect"

/** Every scope a token can carry. REST endpoints and MCP tools each name the one they need. */
export const Scopes = [
  "opportunities:read",
  "opportunities:write",
  "knowledge:read",
  "knowledge:write",
  "messages:send",
  "conversations:read",
  "conversations:write",
  "mcp:use",
  "pipelines:read",
  "pipelines:write",
  "channels:read",
  "channels:write",
  "models:read",
  "models:write"
] as const

export const Scope = Schema.Literal(...Scopes)
export type Scope = typeof Scope.Type

export const isScope = Schema.is(Scope)

/**
 * What a scope brings with it, on REST and MCP alike (docs/mcp.md "Scopes"): `mcp:use` reads pipeline
 * configuration, as `pipelines:read` does, since an assistant cannot build or explain a pipeline it cannot
 * see; every change, and every read of contacts, conversations or knowledge, needs its own scope.
 */
export const ImpliedScopes: Readonly<Partial<Record<Scope, ReadonlyArray<Scope>>>> = { "mcp:use": ["pipelines:read"] }

/** Whether scopes granted to a token allow what `scope` guards. */
export const hasScope = (granted: ReadonlyArray<Scope>, scope: Scope) =>
  granted.includes(scope) || granted.some((g) => ImpliedScopes[g]?.includes(scope) === true)

export const missingScopeMessage = (scope: Scope) => `Missing required scope: ${scope}`
