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
  "channels:write"
] as const

export const Scope = Schema.Literal(...Scopes)
export type Scope = typeof Scope.Type

export const isScope = Schema.is(Scope)

export const missingScopeMessage = (scope: Scope) => `Missing required scope: ${scope}`
