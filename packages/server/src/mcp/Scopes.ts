/**
 * The scopes an MCP client should ask for: `mcp:use` and every scope a tool needs besides it, so that
 * every tool works with what it was granted. Read off the tool catalogue: `mcp:use` first, then the
 * others in the order of `Scopes` (as a grant lists them).
 * Advertised in the 401's `WWW-Authenticate`, as the protected resource's `scopes_supported`, and the
 * default of an authorization request that names no scope.
 */
import { type Scope, Scopes } from "@parley/domain"
import { Tools } from "@parley/mcp"

export const MCP_SCOPE: Scope = "mcp:use"

const needed = new Set<Scope>(Tools.flatMap((t) => (t.scope === undefined ? [] : [t.scope])))

export const McpScopes: ReadonlyArray<Scope> = [MCP_SCOPE, ...Scopes.filter((s) => s !== MCP_SCOPE && needed.has(s))]
