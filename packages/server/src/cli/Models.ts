/**
 * `parley providers list|add|check|remove` and `parley models list|add|remove` (docs/agent.md, "Models and
 * providers"): the model providers and models through the REST API (`--url`, else PARLEY_URL, else this host's
 * PORT; `--token`, else PARLEY_TOKEN, a token with `models:read` and `models:write`), so a provider added here is
 * probed and stored by the same rules as from the console. Lists as tables, one record as `field  value` lines,
 * `--json` for the data as the API answers it. An API key is never printed; `--api-key -` reads it from standard
 * input, out of the shell's history.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, type ConfigError, Console, Effect, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import { record, table } from "./Format.js"
import { reportFailures, RunFailed, UsageError } from "./RemoteFailures.js"

export const options = {
  json: { type: "boolean" },
  url: { type: "string" },
  token: { type: "string" },
  id: { type: "string" },
  kind: { type: "string" },
  name: { type: "string" },
  "base-url": { type: "string" },
  "api-key": { type: "string" },
  header: { type: "string", multiple: true },
  "timeout-ms": { type: "string" },
  "workspace-id": { type: "string" },
  "server-wide": { type: "boolean" },
  "charge-credits": { type: "string" },
  "skip-check": { type: "boolean" },
  "provider-id": { type: "string" },
  model: { type: "string" },
  "input-price": { type: "string" },
  "output-price": { type: "string" },
  "context-window": { type: "string" },
  capabilities: { type: "string" }
} as const

export type ModelFlags = {
  readonly [K in keyof typeof options]?: (typeof options)[K] extends { readonly multiple: true } ? ReadonlyArray<string>
    : (typeof options)[K]["type"] extends "boolean" ? boolean
    : string
}

type Row = Record<string, unknown>

interface Reply {
  readonly status: number
  readonly body: { data?: unknown; message?: string; validation?: Array<{ field: string; message: string }> } | null
}

/** Where the API is and the token to call it with, as `eval run` finds them. */
const endpoint = (f: ModelFlags) =>
  Effect.gen(function*() {
    const port = yield* Config.integer("PORT").pipe(Config.withDefault(3000))
    const base = (f.url ?? (yield* Config.string("PARLEY_URL").pipe(Config.withDefault(`http://127.0.0.1:${port}`))))
      .replace(/\/+$/, "")
    const token = f.token ??
      Option.getOrUndefined(Option.map(yield* Config.option(Config.redacted("PARLEY_TOKEN")), Redacted.value))
    if (token === undefined || token === "") {
      return yield* new UsageError({
        message: "This command needs a token with models:write: --token T or PARLEY_TOKEN"
      })
    }
    return { base, token }
  })

/** One call of `/api/user/<path>`: its data, or the server's answer as one failure naming the fields. */
const call = (f: ModelFlags, method: string, path: string, body?: unknown) =>
  Effect.gen(function*() {
    const { base, token } = yield* endpoint(f)
    const answer = yield* Effect.tryPromise({
      try: async (): Promise<Reply> => {
        const response = await fetch(`${base}/api/user/${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            accept: "application/json",
            ...(body === undefined ? {} : { "content-type": "application/json" })
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        const text = await response.text()
        return { status: response.status, body: text === "" ? null : JSON.parse(text) }
      },
      catch: (e) => new RunFailed({ message: `${base} does not answer: ${e instanceof Error ? e.message : String(e)}` })
    })
    if (answer.status >= 200 && answer.status < 300) return answer.body?.data
    const validation = answer.body?.validation ?? []
    return yield* new RunFailed({
      message: validation.length > 0
        ? validation.map((v) => `${v.field}: ${v.message}`).join("; ")
        : answer.body?.message ?? `The server answered ${answer.status}`
    })
  })

/** A positive integer flag, or a usage error naming it. */
const idFlag = (f: ModelFlags, flag: "id" | "provider-id" | "workspace-id", command: string) => {
  const value = Number(f[flag])
  return f[flag] !== undefined && Number.isInteger(value) && value > 0
    ? Effect.succeed(value)
    : Effect.fail(new UsageError({ message: `${command} needs --${flag} N (a positive integer)` }))
}

/** A number flag, left out when not given. */
const numberFlag = (f: ModelFlags, flag: "timeout-ms" | "input-price" | "output-price" | "context-window") => {
  const text = f[flag]
  if (text === undefined) return Effect.succeed(undefined)
  const value = Number(text)
  return Number.isFinite(value) && text.trim() !== ""
    ? Effect.succeed(value)
    : Effect.fail(new UsageError({ message: `--${flag} must be a number` }))
}

/** `--header "Name: value"` (repeatable) as the API's `headers` object. */
const headersOf = (f: ModelFlags) => {
  const given = f.header ?? []
  const pairs = given.map((h) => /^([^:]+):\s*(.*)$/.exec(h))
  return pairs.some((p) => p === null)
    ? Effect.fail(new UsageError({ message: "--header must look like \"Name: value\"" }))
    : Effect.succeed(
      given.length === 0 ? undefined : Object.fromEntries(pairs.map((p) => [p![1]!.trim(), p![2]!]))
    )
}

/** `--api-key -` reads the key from standard input, so it stays out of the shell's history. */
const apiKeyOf = (f: ModelFlags) =>
  f["api-key"] === "-"
    ? Effect.try({
      try: () => Fs.readFileSync(0, "utf8").trim(),
      catch: () => new UsageError({ message: "--api-key - needs the key on standard input" })
    })
    : Effect.succeed(f["api-key"])

const drop = (row: Row) => Object.fromEntries(Object.entries(row).filter(([, v]) => v !== undefined))

const scopeOf = (p: Row) => (p.server_wide === true ? "server-wide" : `workspace ${String(p.workspace_id)}`)
const price = (n: unknown) => (typeof n === "number" ? n.toFixed(n !== 0 && n < 0.01 ? 4 : 2) : "-")

const providersAdd = (f: ModelFlags) =>
  Effect.gen(function*() {
    const kinds = ["openai_compatible", "openai", "anthropic", "google"]
    if (f.kind === undefined || !kinds.includes(f.kind)) {
      return yield* new UsageError({ message: `providers add needs --kind ${kinds.join("|")}` })
    }
    if (f.name === undefined) return yield* new UsageError({ message: "providers add needs --name N" })
    if (f["charge-credits"] !== undefined && !["yes", "no"].includes(f["charge-credits"])) {
      return yield* new UsageError({ message: "--charge-credits takes yes or no" })
    }
    if (f["server-wide"] === true && f["workspace-id"] !== undefined) {
      return yield* new UsageError({ message: "providers add takes --workspace-id N or --server-wide, not both" })
    }
    const workspace = f["workspace-id"] === undefined
      ? undefined
      : yield* idFlag(f, "workspace-id", "providers add")
    const created = yield* call(
      f,
      "POST",
      "ai-providers",
      drop({
        kind: f.kind,
        name: f.name,
        base_url: f["base-url"],
        api_key: yield* apiKeyOf(f),
        headers: yield* headersOf(f),
        timeout_ms: yield* numberFlag(f, "timeout-ms"),
        workspace_id: workspace,
        server_wide: f["server-wide"],
        charge_credits: f["charge-credits"] === undefined ? undefined : f["charge-credits"] === "yes",
        skip_check: f["skip-check"]
      })
    )
    const row = created as Row
    return {
      data: created,
      text: `${record(row)}\n\nAdd its models: pnpm parley models add --provider-id ${
        String(row.id)
      } --model NAME [--input-price N --output-price N]`
    }
  })

/** What the check found, plainly; exit code 1 when it did not pass. */
const checkText = (c: Row) =>
  [
    `Reachable: ${c.reachable === true ? "yes" : "no"}`,
    ...(c.reachable === true ? [`Models listed: ${(c.models as Array<string>).join(", ") || "none"}`] : []),
    ...(c.model !== null && c.reply !== null ? [`${String(c.model)} answered: ${String(c.reply)}`] : []),
    ...(c.tools === null ? [] : [`Tools: ${c.tools === true ? "yes" : "no"}`]),
    c.ok === true ? "Check passed." : `Problem: ${String(c.problem ?? "the check failed")}`
  ].join("\n")

const providersCheck = (f: ModelFlags) =>
  Effect.gen(function*() {
    const id = yield* idFlag(f, "id", "providers check")
    const result = (yield* call(f, "POST", `ai-providers/${id}/check`, drop({ model: f.model }))) as Row
    if (result.ok !== true) process.exitCode = 1
    return { data: result, text: checkText(result) }
  })

const providersList = (f: ModelFlags) =>
  Effect.gen(function*() {
    const all = (yield* call(f, "GET", "ai-providers")) as Array<Row>
    const models = (yield* call(f, "GET", "ai-models")) as Array<Row>
    const workspace = f["workspace-id"] === undefined ? undefined : yield* idFlag(f, "workspace-id", "providers list")
    const rows = all.filter((p) => workspace === undefined || p.server_wide === true || p.workspace_id === workspace)
    return {
      data: rows,
      text: rows.length === 0 ? "No providers." : table(rows, [
        ["ID", (p) => p.id],
        ["NAME", (p) => p.name],
        ["KIND", (p) => p.kind],
        ["BASE URL", (p) => p.base_url],
        ["SCOPE", scopeOf],
        ["KEY", (p) => (p.has_key === true ? "yes" : "no")],
        ["MODELS", (p) => models.filter((m) => m.ai_provider_id === p.id).map((m) => m.model)]
      ])
    }
  })

const modelsList = (f: ModelFlags) =>
  Effect.gen(function*() {
    const provider = f["provider-id"] === undefined ? undefined : yield* idFlag(f, "provider-id", "models list")
    const rows =
      (yield* call(f, "GET", provider === undefined ? "ai-models" : `ai-models?ai_provider_id=${provider}`)) as Array<
        Row
      >
    return {
      data: rows,
      text: rows.length === 0 ? "No models." : table(rows, [
        ["ID", (m) => m.id],
        ["PROVIDER", (m) => m.ai_provider_id],
        ["NAME", (m) => m.name],
        ["MODEL", (m) => m.model],
        ["INPUT $/1M", (m) => price(m.input_price)],
        ["OUTPUT $/1M", (m) => price(m.output_price)],
        ["CONTEXT", (m) => m.context_window],
        ["CAPABILITIES", (m) => m.capabilities]
      ])
    }
  })

const modelsAdd = (f: ModelFlags) =>
  Effect.gen(function*() {
    const provider = yield* idFlag(f, "provider-id", "models add")
    if (f.model === undefined) return yield* new UsageError({ message: "models add needs --model NAME" })
    const created = yield* call(
      f,
      "POST",
      "ai-models",
      drop({
        ai_provider_id: provider,
        model: f.model,
        name: f.name ?? f.model,
        input_price: yield* numberFlag(f, "input-price"),
        output_price: yield* numberFlag(f, "output-price"),
        context_window: yield* numberFlag(f, "context-window"),
        capabilities: f.capabilities?.split(",").map((s) => s.trim()).filter((s) => s !== "")
      })
    )
    return { data: created, text: record(created as Row) }
  })

const remove = (f: ModelFlags, what: "ai-providers" | "ai-models", command: string) =>
  Effect.gen(function*() {
    const id = yield* idFlag(f, "id", command)
    const deleted = yield* call(f, "DELETE", `${what}/${id}`)
    return { data: deleted, text: `${what === "ai-providers" ? "Provider" : "Model"} ${id} deleted.` }
  })

/** What a command prints: `data` with `--json`, else `text`. */
interface Answer {
  readonly data: unknown
  readonly text: string
}

const commands: Record<
  string,
  (f: ModelFlags) => Effect.Effect<Answer, UsageError | RunFailed | ConfigError.ConfigError>
> = {
  "providers list": providersList,
  "providers add": providersAdd,
  "providers check": providersCheck,
  "providers remove": (f) => remove(f, "ai-providers", "providers remove"),
  "models list": modelsList,
  "models add": modelsAdd,
  "models remove": (f) => remove(f, "ai-models", "models remove")
}

/** Runs `providers <words>` or `models <words>` and exits with its code: 2 for usage errors, 1 for refusals. */
export const runModels = (words: ReadonlyArray<string>, flags: ModelFlags, usage: string) => {
  const command = commands[words.join(" ")]
  const program = (command === undefined
    ? Effect.fail(new UsageError({ message: `Unknown command: ${words.join(" ")}` }))
    : command(flags)).pipe(
      Effect.flatMap((answer) => Console.log(flags.json === true ? JSON.stringify(answer.data) : answer.text)),
      reportFailures(flags.json === true, usage)
    )
  NodeRuntime.runMain(program, { disableErrorReporting: false })
}
