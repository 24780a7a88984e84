/**
 * The CLI's answers for people: lists as tables, one record as `field  value` lines, and after a user or
 * workspace, what it still needs before its agent replies. `--json` prints the result as it is instead.
 */
import type { AdminCommand, WorkspaceNeed } from "../admin/AdminCommand.js"

type Row = Record<string, unknown>

const cell = (value: unknown): string =>
  value === null || value === undefined
    ? "-"
    : Array.isArray(value)
    ? value.length === 0 ? "-" : value.map(cell).join(",")
    : typeof value === "object"
    ? JSON.stringify(value)
    : String(value)

type Column = readonly [header: string, value: (row: Row) => unknown]
const field = (name: string, header = name.toUpperCase()): Column => [header, (row) => row[name]]

/** Left-aligned columns two spaces apart. */
export const table = (rows: ReadonlyArray<Row>, columns: ReadonlyArray<Column>, indent = "") => {
  const cells = [columns.map(([header]) => header), ...rows.map((row) => columns.map(([, value]) => cell(value(row))))]
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)))
  return cells.map((line) =>
    indent + line.map((c, i) => i === line.length - 1 ? c : c.padEnd(widths[i]!)).join("  ").trimEnd()
  ).join("\n")
}

/** `field  value` lines; nested records and arrays of records are left to `--json` unless shown apart. */
export const record = (row: Row, leaveOut: ReadonlyArray<string> = []) => {
  const entries = Object.entries(row).filter(([k]) => !leaveOut.includes(k))
  const width = Math.max(...entries.map(([k]) => k.length))
  return entries.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join("\n")
}

const kinds: Record<string, ReadonlyArray<Column>> = {
  "user.list": [
    field("id"),
    field("email"),
    field("name"),
    ["SUPER", (u) => u.is_super_user ? "yes" : "no"],
    ["WORKSPACES", (u) => (u.workspaces as Array<Row>).map((w) => `${w.workspace_id} (${w.role})`).join(", ")],
    field("created_at", "CREATED")
  ],
  "workspace.list": [
    field("id"),
    field("name"),
    field("owner_email", "OWNER"),
    field("credits"),
    ["SUBSCRIPTION", (w) => w.is_subscription_active ? "active" : "inactive"],
    field("pipelines"),
    field("channels"),
    ["STILL NEEDS", (w) => (w.needs as Array<string>).join(", ") || "-"]
  ],
  "token.list": [
    field("id"),
    field("email", "USER"),
    field("name"),
    ["TOKEN", (t) => `…${t.token_hint}`],
    field("scopes"),
    field("status"),
    field("expires_at", "EXPIRES"),
    field("last_used_at", "LAST USED")
  ],
  "channel.list": [
    field("id"),
    field("workspace_id", "WORKSPACE"),
    field("kind"),
    field("name"),
    field("pipeline_id", "PIPELINE"),
    ["ACTIVE", (c) => c.is_active ? "yes" : "no"],
    field("client_id", "CLIENT ID"),
    ["WEB-CHAT URLS", (c) => [c.initiate_url, c.messages_url, c.widget_embed].filter((u) => u !== null).join("  ")]
  ],
  "pipeline.list": [
    field("id"),
    field("workspace_id", "WORKSPACE"),
    field("name"),
    field("status"),
    ["ARCHIVED", (p) => p.is_archived ? "yes" : "no"],
    field("ai_model_id", "MODEL"),
    field("stages_count", "STAGES"),
    field("channel_id", "CHANNEL")
  ]
}

const plural: Record<string, string> = {
  "user.list": "users",
  "workspace.list": "workspaces",
  "token.list": "tokens",
  "channel.list": "channels",
  "pipeline.list": "pipelines"
}

const needSentence = (need: WorkspaceNeed, workspaceId: unknown, onCreate: boolean) => {
  switch (need) {
    case "subscription":
      return `an active subscription: pnpm parley workspace set --workspace-id ${workspaceId} --subscription active`
    case "credits":
      return `credits: pnpm parley workspace set --workspace-id ${workspaceId} --credits 100` +
        (onCreate ? " (or --credits N when creating)" : "")
    case "pipeline":
      return "an active pipeline with stages: POST /api/user/pipelines, then its stages (docs/api.md), or MCP create_pipeline"
    case "channel":
      return `a channel linked to that pipeline: pnpm parley channel create --workspace-id ${workspaceId} --kind web|widget --pipeline-id P`
  }
}

/** What a workspace still lacks before its agent replies, one line each with the command that gives it. */
export const needsText = (workspaceId: unknown, needs: ReadonlyArray<WorkspaceNeed>, onCreate: boolean) =>
  needs.length === 0
    ? `Workspace ${workspaceId} has what its agent needs to reply.`
    : [
      `Before its agent replies, workspace ${workspaceId} still needs:`,
      ...needs.map((n) => `  - ${needSentence(n, workspaceId, onCreate)}`)
    ]
      .join("\n")

/** The result of `command` for people. */
export const render = (command: AdminCommand, result: unknown): string => {
  const columns = kinds[command._tag]
  if (columns !== undefined) {
    const rows = result as ReadonlyArray<Row>
    return rows.length === 0 ? `No ${plural[command._tag]}.` : table(rows, columns)
  }
  const row = result as Row
  switch (command._tag) {
    case "user.create":
    case "workspace.create":
      return `${record(row, ["needs"])}\n\n${needsText(row.workspace_id, row.needs as Array<WorkspaceNeed>, true)}`
    case "workspace.set":
      return `${record(row, ["needs"])}\n\n${needsText(row.id, row.needs as Array<WorkspaceNeed>, false)}`
    case "workspace.show":
      return [
        record(row, ["needs", "members"]),
        "",
        "Members:",
        table(row.members as Array<Row>, [field("user_id", "USER"), field("email"), field("role")], "  "),
        "",
        needsText(row.id, row.needs as Array<WorkspaceNeed>, false)
      ].join("\n")
    case "user.show":
      return [
        record(row, ["workspaces"]),
        "",
        "Workspaces:",
        table(row.workspaces as Array<Row>, [field("workspace_id", "ID"), field("name"), field("role")], "  ")
      ].join("\n")
    case "pipeline.show":
      return [
        record(row, ["stages", "is_model_routing"]),
        "",
        "Stages:",
        table(row.stages as Array<Row>, [field("id"), field("order"), field("name"), field("nature")], "  ")
      ].join("\n")
    case "migrate": {
      const applied = row.applied as Array<string>
      return applied.length === 0
        ? "Nothing to apply: the database is up to date."
        : `Applied ${applied.length} migrations:\n  ${applied.join("\n  ")}`
    }
    default:
      return record(row)
  }
}
