/**
 * The CLI as an operator runs it on the embedded database: real child processes (through tsx, waits in
 * multiples of support/Cli.ts's `unit`). First with no server (the CLI opens the data dir itself), then
 * while `parley serve` holds it (commands travel to the server's loopback admin endpoint; the data dir is
 * never opened twice). The CLI with DATABASE_URL: cli-database-url.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ConnectableKinds } from "@parley/domain"
import { Schema } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  cli,
  envFor,
  jsonAs,
  parley,
  parleyAs,
  parleyText,
  root,
  run,
  serverStart,
  testTimeout,
  tsx
} from "./support/Cli.js"
import { type ApiResponse, ok } from "./support/Contract.js"
import { startFakeModelServer } from "./support/FakeModelServer.js"

interface Running {
  readonly child: ChildProcess
  readonly api: string
  readonly receiver: string
  readonly output: () => string
}

const serve = (dataDir: string, extra: Record<string, string> = {}) =>
  new Promise<Running>((resolve, reject) => {
    const child = spawn(tsx, [cli, "serve"], { cwd: root, env: envFor(dataDir, extra) })
    let output = ""
    const timer = setTimeout(
      () => reject(new Error(`server did not start within ${serverStart} ms:\n${output}`)),
      serverStart
    )
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      const receiver = /Receiver\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      if (api && receiver && output.includes("Data ")) {
        clearTimeout(timer)
        resolve({ child, api, receiver, output: () => output })
      }
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  })

const stop = (server: Running | undefined) =>
  new Promise<void>((resolve) => {
    if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return resolve()
    server.child.on("exit", () => resolve())
    server.child.kill("SIGTERM")
  })

/** A request to the served API, answered as the suites' `call` answers (support/Contract.ts reads the body). */
const api = async (base: string, path: string, token: string, init: RequestInit = {}): Promise<ApiResponse> => {
  const url = base + path
  const response = await fetch(url, {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers }
  })
  const body: unknown = await response.json()
  return { status: response.status, body, headers: response.headers, method: init.method ?? "GET", url }
}

// What the tests read of the CLI's JSON answers (the rest is compared whole: see support/Cli.ts `jsonAs`).

/** `token create` */
const CreatedToken = Schema.Struct({ id: Schema.Number, token: Schema.String })

/** `channel create` and `channel rotate`: the channel with its secret and web-chat addresses. */
const CliChannel = Schema.Struct({
  id: Schema.Number,
  client_id: Schema.String,
  client_secret: Schema.String,
  pipeline_id: Schema.NullOr(Schema.Number),
  widget_embed: Schema.NullOr(Schema.String)
})
type CliChannel = typeof CliChannel.Type

/** `providers add` and `models add`: the records as the REST API answers them. */
const CliProvider = Schema.Struct({
  id: Schema.Number,
  has_key: Schema.Boolean,
  base_url: Schema.NullOr(Schema.String)
})
const CliModel = Schema.Struct({ id: Schema.Number, ai_provider_id: Schema.Number, model: Schema.String })

/** `server.json` in the data dir while `parley serve` runs. */
const ServerJson = Schema.Struct({ admin_url: Schema.String, pid: Schema.Number })

const UserList = Schema.Array(Schema.Struct({
  id: Schema.Number,
  email: Schema.String,
  workspaces: Schema.Array(Schema.Struct({ workspace_id: Schema.Number, role: Schema.String }))
}))
const WorkspaceList = Schema.Array(Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  credits: Schema.Number,
  is_subscription_active: Schema.Boolean,
  needs: Schema.Array(Schema.String)
}))
const TokenList = Schema.Array(Schema.Struct({
  id: Schema.Number,
  email: Schema.String,
  name: Schema.String,
  status: Schema.String,
  token_hint: Schema.String
}))
const ChannelList = Schema.Array(Schema.Struct({
  id: Schema.Number,
  kind: Schema.String,
  client_id: Schema.String,
  initiate_url: Schema.NullOr(Schema.String),
  messages_url: Schema.NullOr(Schema.String)
}))
const PipelineList = Schema.Array(Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  stages_count: Schema.Number,
  channel_id: Schema.NullOr(Schema.Number)
}))

/** Runs `tasks` a few at a time (each is a child process; the machine has two cores). */
const few = async <A>(tasks: ReadonlyArray<() => Promise<A>>, width = 3) => {
  const results: Array<A> = new Array(tasks.length)
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < tasks.length) {
      const i = next++
      results[i] = await tasks[i]!()
    }
  }))
  return results
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex")

describe("parley CLI on the embedded database", () => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-cli-"))
  let owner: typeof CreatedToken.Type
  let web: CliChannel
  let widget: CliChannel

  it(
    "with no server, opens and migrates the data dir itself, says what a new workspace needs, and leaves no lock",
    async () => {
      const created = await parleyText(dataDir, [
        "user",
        "create",
        "--email",
        "ops@example.com",
        "--password",
        "s3cret-pass",
        "--workspace-name",
        "Ops"
      ])
      expect(created).toMatch(/^user_id\s+1$/m)
      expect(created).toMatch(/^workspace_id\s+1$/m)
      expect(created).toContain("Before its agent replies, workspace 1 still needs:")
      expect(created).toContain(
        "credits: pnpm parley workspace set --workspace-id 1 --credits 100 (or --credits N when creating)"
      )
      expect(created).toContain("an active pipeline with stages")
      expect(created).toContain(
        "a channel linked to that pipeline: pnpm parley channel create --workspace-id 1 --kind web|widget"
      )
      expect(Fs.existsSync(Path.join(dataDir, "lock"))).toBe(false)
    },
    testTimeout
  )

  describe("while `parley serve` holds the data dir", () => {
    let server: Running
    const secrets: Array<string> = []
    let pipelineId = 0

    beforeAll(async () => {
      server = await serve(dataDir)
    }, serverStart)
    afterAll(() => stop(server))

    it(
      "creates through the server's admin endpoint: tokens, channels of every kind with their web-chat URLs",
      async () => {
        const info = jsonAs(Fs.readFileSync(Path.join(dataDir, "server.json"), "utf8"), ServerJson)
        expect(info.admin_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
        // the serving process (tsx runs it as a child) holds the data-dir lock
        expect(Fs.readFileSync(Path.join(dataDir, "lock"), "utf8")).toBe(String(info.pid))
        // the user made with no server running
        owner = await parleyAs(CreatedToken, dataDir, [
          "token",
          "create",
          "--email",
          "ops@example.com",
          "--scopes",
          "pipelines:read,pipelines:write,channels:read"
        ])
        expect(owner.token).toMatch(/^pat_[0-9A-Za-z]{43}$/)
        const me = await api(server.api, "/api/user/me", owner.token)
        expect(me.status).toBe(200)
        expect(ok(me, "account.me").user.email).toBe("ops@example.com")

        const online = await parleyAs(CreatedToken, dataDir, [
          "token",
          "create",
          "--email",
          "ops@example.com",
          "--scopes",
          "channels:read",
          "--name",
          "online"
        ])
        expect((await api(server.api, "/api/user/channels", online.token)).status).toBe(200)
        secrets.push(owner.token, online.token)

        const pipeline = await api(server.api, "/api/user/pipelines", owner.token, {
          method: "POST",
          body: JSON.stringify({ name: "CLI pipeline", agent_type_id: 1, ai_model_id: 1, language_id: 1 })
        })
        expect(pipeline.status).toBe(200)
        pipelineId = ok(pipeline, "pipelines.create").id
        const stage = await api(server.api, `/api/user/pipelines/${pipelineId}/stages`, owner.token, {
          method: "POST",
          body: JSON.stringify({ name: "New", nature: "neutral", order: 1 })
        })
        expect(stage.status).toBe(200)

        web = await parleyAs(CliChannel, dataDir, [
          "channel",
          "create",
          "--workspace-id",
          "1",
          "--kind",
          "web",
          "--pipeline-id",
          String(pipelineId),
          "--callback-url",
          "https://example.com/hook",
          "--allowed-origins",
          "https://shop.example.com"
        ])
        widget = await parleyAs(CliChannel, dataDir, [
          "channel",
          "create",
          "--workspace-id",
          "1",
          "--kind",
          "widget",
          "--name",
          "Shop widget",
          "--allowed-origins",
          "https://shop.example.com"
        ])
        expect(web.client_id).toMatch(/^wc_/)
        expect(web.client_secret).toMatch(/^wcs_/)
        expect(web).toMatchObject({
          initiate_url: `${server.api}/api/user/web-chat/initiate`,
          messages_url: `${server.receiver}/web-chat/message`,
          widget_embed: null
        })
        expect(widget).toMatchObject({
          kind: "widget",
          initiate_url: null,
          messages_url: `${server.receiver}/web-chat/message`,
          widget_embed: `<script src="${server.api}/widget.js" data-client-id="${widget.client_id}" async></script>`
        })
        secrets.push(web.client_secret, widget.client_secret)

        const metadata = await run(dataDir, [
          "channel",
          "create",
          "--workspace-id",
          "1",
          "--kind",
          "web",
          "--callback-url",
          "http://169.254.169.254/latest/meta-data",
          "--json"
        ])
        expect(metadata.code).toBe(1)
        expect(JSON.parse(metadata.stdout)).toEqual({
          error:
            "callback_url: The callback_url field must point at a public address: 169.254.169.254 is a loopback, private or " +
            "link-local address, which this server calls only when OUTBOUND_ALLOW_PRIVATE=true."
        })
        const channels = await api(server.api, "/api/user/channels", online.token)
        const listed = ok(channels, "channels.list")
        expect(listed.map((c) => c.client_id)).toEqual([web.client_id, widget.client_id])
        expect(listed[0]).toMatchObject({
          pipeline_id: pipelineId,
          allowed_origins: ["https://shop.example.com"]
        })

        // both at once, as `few` runs two tasks
        const [revoked, failure] = await Promise.all([
          parley(dataDir, ["token", "revoke", "--id", String(online.id)]),
          run(dataDir, ["user", "grant-manager", "--email", "nobody@example.com", "--workspace-id", "1", "--json"])
        ])
        expect(revoked).toEqual({ id: online.id, revoked: true })
        expect((await api(server.api, "/api/user/channels", online.token)).status).toBe(401)
        expect(JSON.parse(failure.stdout)).toEqual({ error: "No user with email nobody@example.com" })
      },
      testTimeout
    )

    it(
      "user and workspace create say what the workspace still needs to reply; --credits gives it credits",
      async () => {
        // one after the other, so the workspaces are 2, 3 and 4
        const creates = async () => [
          await parley(dataDir, [
            "user",
            "create",
            "--email",
            "second@example.com",
            "--password",
            "s3cret-pass",
            "--credits",
            "25"
          ]),
          await parleyText(dataDir, [
            "workspace",
            "create",
            "--email",
            "ops@example.com",
            "--name",
            "Second shop",
            "--credits",
            "5"
          ]),
          await parley(dataDir, ["workspace", "create", "--email", "second@example.com", "--name", "Bare"])
        ]
        // workspace 1 has an active pipeline with a stage and a channel linked to it: only credits are missing
        const [[user, workspace, bare], set] = await Promise.all([
          creates(),
          parleyText(dataDir, ["workspace", "set", "--workspace-id", "1", "--credits", "50"])
        ])
        expect(user).toMatchObject({
          email: "second@example.com",
          credits: 25,
          is_subscription_active: true,
          needs: ["pipeline", "channel"]
        })
        expect(workspace).toMatch(/^name\s+Second shop$/m)
        expect(workspace).toMatch(/^credits\s+5$/m)
        expect(workspace).toMatch(
          /still needs:\n {2}- an active pipeline with stages.*\n {2}- a channel linked to that pipeline/
        )
        expect(workspace).not.toContain("- credits")
        expect(bare).toMatchObject({
          name: "Bare",
          owner_email: "second@example.com",
          credits: 0,
          needs: ["credits", "pipeline", "channel"]
        })
        expect(set).toMatch(/^credits\s+50$/m)
        expect(set).toContain("Workspace 1 has what its agent needs to reply.")
        const off = await parley(dataDir, ["workspace", "set", "--workspace-id", "4", "--subscription", "inactive"])
        expect(off).toMatchObject({
          id: 4,
          is_subscription_active: false,
          needs: ["subscription", "credits", "pipeline", "channel"]
        })
        // the drafts setting of pipeline versions (docs/versions.md), alone or with the rest
        expect(off).toMatchObject({ drafts: false })
        expect(await parley(dataDir, ["workspace", "set", "--workspace-id", "4", "--drafts", "on"])).toMatchObject({
          id: 4,
          drafts: true,
          is_subscription_active: false
        })
        expect(await parley(dataDir, ["workspace", "set", "--workspace-id", "4", "--drafts", "off", "--credits", "0"]))
          .toMatchObject({ drafts: false, credits: 0 })
        const bad = await run(dataDir, ["workspace", "set", "--workspace-id", "4", "--drafts", "maybe"])
        expect(bad.code).toBe(2)
        expect(bad.stderr).toContain("drafts")
      },
      testTimeout
    )

    it(
      "lists and shows users, workspaces, tokens, channels and pipelines, as text and as JSON, never a secret",
      async () => {
        const shows = [
          ["user", "list"],
          ["user", "show", "--email", "ops@example.com"],
          ["workspace", "list"],
          ["workspace", "show", "--workspace-id", "1"],
          ["token", "list"],
          ["token", "show", "--id", String(owner.id)],
          ["channel", "list"],
          ["channel", "show", "--id", String(widget.id)],
          ["pipeline", "list"],
          ["pipeline", "show", "--id", String(pipelineId)]
        ]
        const answers = await few(
          shows.flatMap((args) => [() => parleyText(dataDir, args), () => parleyText(dataDir, [...args, "--json"])])
        )
        /** The i-th command's text, and its JSON decoded with `schema` (Unknown: only compared whole). */
        const answer = <A, I>(i: number, schema: Schema.Schema<A, I>) => ({
          text: answers[2 * i]!,
          json: jsonAs(answers[2 * i + 1]!, schema)
        })
        const [userList, userShow, workspaceList, workspaceShow, tokenList] = [
          answer(0, UserList),
          answer(1, Schema.Unknown),
          answer(2, WorkspaceList),
          answer(3, Schema.Unknown),
          answer(4, TokenList)
        ] as const
        const [tokenShow, channelList, channelShow, pipelineList, pipelineShow] = [
          answer(5, Schema.Unknown),
          answer(6, ChannelList),
          answer(7, Schema.Unknown),
          answer(8, PipelineList),
          answer(9, Schema.Unknown)
        ] as const

        for (const answer of answers) {
          for (const secret of secrets) {
            expect(answer).not.toContain(secret)
            expect(answer).not.toContain(sha256(secret))
          }
          expect(answer).not.toContain("s3cret-pass")
          expect(answer).not.toMatch(/scrypt\$|client_secret|secret_ciphertext|token_hash|password/)
        }

        expect(userList.json.map((u) => [u.id, u.email, u.workspaces.map((w) => [w.workspace_id, w.role])]))
          .toEqual([
            [1, "ops@example.com", [[1, "owner"], [3, "owner"]]],
            [2, "second@example.com", [[2, "owner"], [4, "owner"]]]
          ])
        expect(userList.text).toMatch(/^ID\s+EMAIL\s+NAME\s+SUPER\s+WORKSPACES\s+CREATED$/m)
        expect(userList.text).toMatch(/^1\s+ops@example\.com\s+-\s+no\s+1 \(owner\), 3 \(owner\)\s/m)
        expect(userShow.json).toMatchObject({
          id: 1,
          email: "ops@example.com",
          workspaces: [{ workspace_id: 1, name: "Ops", role: "owner" }, { workspace_id: 3 }]
        })
        expect(userShow.text).toMatch(/^email\s+ops@example\.com$/m)
        expect(userShow.text).toMatch(/^ {2}1\s+Ops\s+owner$/m)

        expect(workspaceList.json.map((w) => [w.id, w.name, w.credits, w.is_subscription_active, w.needs]))
          .toEqual([
            [1, "Ops", 50, true, []],
            [2, "second's workspace", 25, true, ["pipeline", "channel"]],
            [3, "Second shop", 5, true, ["pipeline", "channel"]],
            [4, "Bare", 0, false, ["subscription", "credits", "pipeline", "channel"]]
          ])
        expect(workspaceList.text).toMatch(/^1\s+Ops\s+ops@example\.com\s+50\s+active\s+1\s+2\s+-$/m)
        expect(workspaceList.text).toMatch(
          /^4\s+Bare\s+second@example\.com\s+0\s+inactive\s+0\s+0\s+subscription, credits, pipeline, channel$/m
        )
        expect(workspaceShow.json).toMatchObject({
          id: 1,
          owner_email: "ops@example.com",
          pipelines: 1,
          channels: 2,
          needs: [],
          members: [{ user_id: 1, email: "ops@example.com", role: "owner" }]
        })
        expect(workspaceShow.text).toMatch(/^owner_email\s+ops@example\.com$/m)
        expect(workspaceShow.text).toContain("Workspace 1 has what its agent needs to reply.")

        expect(tokenList.json.map((t) => [t.id, t.email, t.name, t.status])).toEqual([
          [owner.id, "ops@example.com", "CLI token", "active"],
          [owner.id + 1, "ops@example.com", "online", "revoked"]
        ])
        expect(tokenList.json[0]?.token_hint).toBe(owner.token.slice(-4))
        expect(tokenList.text).toMatch(
          new RegExp(
            `^${owner.id}\\s+ops@example\\.com\\s+CLI token\\s+…${
              owner.token.slice(-4)
            }\\s+pipelines:read,pipelines:write,channels:read\\s+active`,
            "m"
          )
        )
        expect(tokenShow.json).toMatchObject({
          id: owner.id,
          user_id: 1,
          scopes: ["pipelines:read", "pipelines:write", "channels:read"],
          revoked_at: null
        })
        expect(tokenShow.text).toMatch(/^status\s+active$/m)

        expect(channelList.json.map((c) => [c.id, c.kind, c.client_id, c.messages_url])).toEqual([
          [web.id, "web", web.client_id, `${server.receiver}/web-chat/message`],
          [widget.id, "widget", widget.client_id, `${server.receiver}/web-chat/message`]
        ])
        expect(channelList.json[0]?.initiate_url).toBe(`${server.api}/api/user/web-chat/initiate`)
        expect(channelList.text).toContain(
          `${server.api}/api/user/web-chat/initiate  ${server.receiver}/web-chat/message`
        )
        expect(channelList.text).toContain(
          `<script src="${server.api}/widget.js" data-client-id="${widget.client_id}" async></script>`
        )
        expect(channelShow.json).toMatchObject({
          id: widget.id,
          name: "Shop widget",
          widget_embed: widget.widget_embed,
          allowed_origins: ["https://shop.example.com"]
        })
        expect(channelShow.text).toMatch(/^widget_embed\s+<script /m)

        expect(pipelineList.json.map((p) => [p.id, p.name, p.stages_count, p.channel_id])).toEqual([[
          pipelineId,
          "CLI pipeline",
          1,
          web.id
        ]])
        expect(pipelineList.text).toMatch(
          new RegExp(`^${pipelineId}\\s+1\\s+CLI pipeline\\s+active\\s+no\\s+1\\s+1\\s+${web.id}$`, "m")
        )
        expect(pipelineShow.json).toMatchObject({
          id: pipelineId,
          name: "CLI pipeline",
          stages: [{ name: "New", nature: "neutral", order: 1 }]
        })
        expect(pipelineShow.text).toMatch(/^Stages:\n {2}ID\s+ORDER\s+NAME\s+NATURE\n {2}\d+\s+1\s+New\s+neutral$/m)

        const unknown = await run(dataDir, ["pipeline", "show", "--id", "999", "--json"])
        expect([unknown.code, JSON.parse(unknown.stdout)]).toEqual([1, { error: "No pipeline with id 999" }])
      },
      testTimeout
    )

    it(
      "adds, checks, lists and removes a model provider and its models through the REST API, never showing its key",
      async () => {
        const fake = await startFakeModelServer({ apiKey: "sk-cli-key", models: ["llama3.1:8b", "qwen2.5:7b"] })
        try {
          const { token } = await parleyAs(CreatedToken, dataDir, [
            "token",
            "create",
            "--email",
            "ops@example.com",
            "--scopes",
            "models:read,models:write",
            "--name",
            "models"
          ])
          const env = { PARLEY_URL: server.api, PARLEY_TOKEN: token }
          const add = ["providers", "add", "--kind", "openai_compatible", "--name", "GPU box", "--workspace-id", "1"]
          // the server asks the fake for its models with the key before saving: a wrong one is refused at api_key
          const [wrong, provider, usage] = await Promise.all([
            run(dataDir, [...add, "--base-url", fake.openAiUrl, "--api-key", "sk-wrong-key", "--json"], env),
            parleyAs(CliProvider, dataDir, [...add, "--base-url", fake.openAiUrl, "--api-key", "sk-cli-key"], env),
            run(dataDir, ["providers", "add", "--kind", "openai_compatible"], env)
          ])
          expect(wrong.code).toBe(1)
          expect(JSON.parse(wrong.stdout).error).toMatch(/^api_key: The provider refused the API key \(401/)
          expect([usage.code, usage.stderr]).toEqual([2, expect.stringContaining("providers add needs --name N")])
          expect(provider).toMatchObject({
            kind: "openai_compatible",
            base_url: fake.openAiUrl,
            has_key: true,
            workspace_id: 1,
            server_wide: false
          })
          const id = String(provider.id)
          const check = await parleyText(dataDir, ["providers", "check", "--id", id, "--model", "llama3.1:8b"], env)
          expect(check).toMatch(/^Reachable: yes\nModels listed: llama3\.1:8b, qwen2\.5:7b\n/)
          expect(check).toMatch(/Check passed\.\n$/)
          const model = await parleyAs(CliModel, dataDir, [
            "models",
            "add",
            "--provider-id",
            id,
            "--model",
            "llama3.1:8b",
            "--name",
            "Llama 3.1",
            "--input-price",
            "0.1",
            "--output-price",
            "0.2",
            "--context-window",
            "131072",
            "--capabilities",
            "tools"
          ], env)
          expect(model).toMatchObject({ ai_provider_id: provider.id, input_price: 0.1, capabilities: ["tools"] })
          const [providers, models] = await Promise.all([
            parleyText(dataDir, ["providers", "list", "--workspace-id", "1"], env),
            parleyText(dataDir, ["models", "list", "--provider-id", id], env)
          ])
          expect(providers).toMatch(/^ID\s+NAME\s+KIND\s+BASE URL\s+SCOPE\s+KEY\s+MODELS$/m)
          expect(providers).toMatch(
            new RegExp(
              `^${id}\\s+GPU box\\s+openai_compatible\\s+${fake.openAiUrl}\\s+workspace 1\\s+yes\\s+llama3\\.1:8b$`,
              "m"
            )
          )
          expect(models).toMatch(
            new RegExp(
              `^${model.id}\\s+${id}\\s+Llama 3\\.1\\s+llama3\\.1:8b\\s+0\\.10\\s+0\\.20\\s+131072\\s+tools$`,
              "m"
            )
          )
          for (const out of [wrong.stdout, wrong.stderr, check, providers, models, JSON.stringify(provider)]) {
            expect(out).not.toContain("sk-cli-key")
            expect(out).not.toContain("sk-wrong-key")
          }
          expect(await parley(dataDir, ["models", "remove", "--id", String(model.id)], env)).toEqual({
            id: model.id,
            deleted: true
          })
          expect(await parleyText(dataDir, ["providers", "remove", "--id", id], env)).toBe(`Provider ${id} deleted.\n`)
          const gone = await run(dataDir, ["providers", "check", "--id", id, "--json"], env)
          expect([gone.code, JSON.parse(gone.stdout)]).toEqual([1, { error: "AI provider not found." }])
        } finally {
          await fake.close()
        }
      },
      testTimeout
    )
  })

  it("once the server stopped, opens the data dir again, sees what the server wrote and writes", async () => {
    expect(Fs.existsSync(Path.join(dataDir, "server.json"))).toBe(false)
    expect(Fs.existsSync(Path.join(dataDir, "lock"))).toBe(false)
    // a channel the server made
    const rotated = await parleyAs(CliChannel, dataDir, ["channel", "rotate", "--id", String(web.id)])
    expect(rotated).toMatchObject({ id: web.id, name: "Web chat", pipeline_id: web.pipeline_id })
    expect(rotated.client_secret).toMatch(/^wcs_/)
    expect(rotated.client_id).not.toBe(web.client_id)
    // no server: the addresses follow HOST, PORT and RECEIVER_PORT (0 here: unknown)
    expect(rotated).toMatchObject({ initiate_url: null, messages_url: null })
    // a WhatsApp channel: its credentials from flags, checked and stored encrypted, never shown; the webhook URL
    // and the verify token to paste into Meta's dashboard
    const whatsappArgs = ["channel", "create", "--workspace-id", "1", "--kind", "whatsapp", "--phone-number-id"]
    const whatsapp = await run(dataDir, [
      ...whatsappArgs,
      "106540352242922",
      "--access-token",
      "EAAG-cli-token",
      "--app-secret",
      "cli-app-secret",
      "--json"
    ])
    expect(whatsapp.code).toBe(0)
    expect(JSON.parse(whatsapp.stdout)).toMatchObject({
      kind: "whatsapp",
      webhook_url: expect.stringMatching(/\/channels\/wh_[A-Za-z0-9]+\/webhook$/),
      verify_token: expect.stringMatching(/^pvt_/)
    })
    expect(whatsapp.stdout).not.toContain("EAAG-cli-token")
    const missing = await run(dataDir, [...whatsappArgs, "abc", "--json"])
    expect(missing.code).toBe(1)
    expect(missing.stdout + missing.stderr).toContain("credentials.access_token")
    // any provider kind with the simulator Parley ships: no account at the provider
    const simulated = await run(dataDir, [
      "channel",
      "create",
      "--workspace-id",
      "1",
      "--kind",
      "messenger",
      "--simulator",
      "--json"
    ])
    expect(simulated.code).toBe(0)
    expect(JSON.parse(simulated.stdout)).toMatchObject({
      kind: "messenger",
      simulator_url: expect.stringMatching(/\/simulator\/messenger\/wh_[A-Za-z0-9]+$/)
    })
    // the drafts setting, on the data dir opened here
    expect(await parley(dataDir, ["workspace", "set", "--workspace-id", "4", "--drafts", "on"])).toMatchObject({
      id: 4,
      drafts: true
    })
  }, testTimeout)
})

describe("parley CLI usage", () => {
  it("--help lists every command and every kind of channel that can be connected, widget too", async () => {
    const help = await run(Os.tmpdir(), ["--help"])
    expect(help.code).toBe(0)
    const kinds = /channel create .*--kind ([a-z|]+)/.exec(help.stdout)?.[1]?.split("|")
    expect(kinds).toEqual([...ConnectableKinds])
    expect(kinds).toContain("widget")
    for (const noun of ["user", "workspace", "token", "channel", "pipeline"]) {
      expect(help.stdout).toContain(`${noun} list`)
      expect(help.stdout).toContain(`${noun} show`)
    }
    expect(help.stdout).toContain("[--credits N]")
  }, testTimeout)

  it("refuses an unknown command with the usage text and exit code 2", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-usage-"))
    const error = await run(dataDir, ["frobnicate"])
    expect(error.code).toBe(2)
    expect(error.stderr).toContain("Unknown command: frobnicate")
    expect(error.stderr).toContain("Usage: pnpm parley")
  }, testTimeout)

  it("first start seeds a demo workspace whose printed token works, and later starts reuse it", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-demo-"))
    const first = await serve(dataDir, { PARLEY_SEED_DEMO: "true" })
    let token = ""
    try {
      token = /export PARLEY_TOKEN=(pat_\w+)/.exec(first.output())?.[1] ?? ""
      expect(token).not.toBe("")
      const pipelines = await api(first.api, "/api/user/pipelines", token)
      const listed = ok(pipelines, "pipelines.list")
      expect(listed).toHaveLength(1)
      const detail = await api(first.api, `/api/user/pipelines/${listed[0]!.id}`, token)
      expect(ok(detail, "pipelines.get").stages.map((s) => [s.name, s.nature, s.order])).toEqual([
        ["New lead", "neutral", 1],
        ["Demo booked", "won", 2],
        ["Not interested", "lost", 3]
      ])
      const channels = await api(first.api, "/api/user/channels", token)
      expect(ok(channels, "channels.list")[0]).toMatchObject({ kind: "web", pipeline_id: listed[0]!.id })
    } finally {
      await stop(first)
    }
    const second = await serve(dataDir, { PARLEY_SEED_DEMO: "true" })
    try {
      expect(second.output()).toContain(`export PARLEY_TOKEN=${token}`)
      expect(ok(await api(second.api, "/api/user/pipelines", token), "pipelines.list")).toHaveLength(1)
    } finally {
      await stop(second)
    }
  }, testTimeout)
})
