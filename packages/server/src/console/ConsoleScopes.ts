import type { Scope } from "@parley/domain"

/**
 * What the console's token may do: read and work conversations, send, move opportunities; read pipelines; see and
 * connect channels; see, check and add model providers and their models; see, fill, sync and search knowledge tables
 * (the knowledge page: its sources and their files).
 */
export const CONSOLE_SCOPES: ReadonlyArray<Scope> = [
  "conversations:read",
  "conversations:write",
  "messages:send",
  "opportunities:read",
  "opportunities:write",
  "pipelines:read",
  "channels:read",
  "channels:write",
  "models:read",
  "models:write",
  "knowledge:read",
  "knowledge:write"
]

/** A console token lives 15 minutes; the page renews it at two thirds of that. */
export const CONSOLE_TOKEN_TTL_MS = 15 * 60_000
