/**
 * Docs that run: every fenced `sh` block of README.md and docs/*.md is run, in order, against one fresh
 * `parley serve` (what `pnpm start` runs, with the demo seed) or is on the skip list below with its
 * reason. Each document runs in its own bash with what the start banner tells a reader to export
 * (`PARLEY_TOKEN`); addresses, placeholder exports (`...`) and ids captured from earlier answers are
 * substituted as docs/api.md's "Examples in these docs" describes, and each request's answer is checked
 * against what the document claims for it (a `# =>` comment or a following json block), else must be 2xx.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Running, serve, stop } from "./support/ChildServer.js"
import {
  type Block,
  blocksOf,
  documents,
  isRunnable,
  keyOf,
  runDocument,
  shellBlocks,
  where
} from "./support/DocExamples.js"

const root = Path.resolve(__dirname, "../../..")

/**
 * Blocks that are not requests to a running server, by file and first line. Reviewed: a new block that
 * is neither runnable (curl, or only exports) nor listed here fails the suite, and so does a stale entry.
 */
const skipped: Record<string, string> = {
  "README.md: pnpm install && pnpm start     # the whole service on the embedded defaults (data in .parley/)":
    "installs and starts the server this suite starts itself (test/widget.browser.test.ts drives that first start)",
  "README.md: pnpm parley migrate": "the command line, with `serve` among its commands; test/cli.test.ts runs it",
  "README.md: pnpm parley user create --email you@example.com --password 'long-password' --workspace-name Acme --credits 100":
    "the command line, for a user of your own; test/cli.test.ts runs `user create --credits`",
  "README.md: pnpm typecheck                 # tsc, strict with exactOptionalPropertyTypes":
    "development commands, not requests",
  "docs/benchmarks.md: pnpm bench:rest          # 10 s per scenario; `npx tsx bench/rest.ts 5` for 5 s":
    "a benchmark run, minutes long",
  "docs/benchmarks.md: npx tsx bench/rest.ts 10                                          # embedded, one process":
    "benchmark runs on the embedded database and throwaway Postgres clusters, minutes long",
  "docs/benchmarks.md: BENCH_PG=throwaway BENCH_TOPOLOGY=split npx tsx bench/handover.ts   # and without BENCH_TOPOLOGY, and without BENCH_PG":
    "a benchmark run on a throwaway Postgres cluster and several server processes",
  "docs/benchmarks.md: npx tsx bench/whatsapp.ts           # 10 s per row and 2,000 replies; `npx tsx bench/whatsapp.ts 5 1000` for less":
    "a benchmark run, minutes long",
  "docs/benchmarks.md: pnpm bench:receiver      # 10 s per row and 5,000 sockets; `npx tsx bench/receiver.ts 5 1000` for less":
    "a benchmark run, minutes long",
  "docs/benchmarks.md: pnpm bench:reply         # 10 s per row, 64 conversations; `npx tsx bench/reply.ts 5 32` for less":
    "a benchmark run, minutes long",
  "docs/benchmarks.md: wc -c packages/server/src/assets/widget.js               # 20,699 bytes as written":
    "measures a file of the repository, no server",
  "docs/benchmarks.md: pnpm bench:knowledge                      # 100,000 rows, 200 queries, fresh data dir":
    "a benchmark run, minutes long",
  "docs/benchmarks.md: pnpm build && npx tsx bench/startup.ts 5":
    "a benchmark run of the production build, a minute long",
  "docs/benchmarks.md: npx tsx bench/console.ts 10 30 10000     # 10 first loads, 30 messages, 10,000 conversations":
    "a benchmark run in Chromium, a minute long",
  "docs/benchmarks.md: npx tsx bench/knowledge.ts 100000 200                  # REST, 500 rows a request (BENCH_DATA_DIR to keep the dir)":
    "a benchmark run, minutes long",
  "docs/benchmarks.md: BENCH_DATA_DIR=/tmp/kb100f/d npx tsx bench/knowledge.ts 100000 200    # twice: load and search, then search":
    "a benchmark run, minutes long",
  "docs/benchmarks.md: BENCH_INDEX_DIR=/tmp/idx npx tsx bench/knowledge-index.ts 100000 16 64 100,200,250,400,600,800,1000":
    "a benchmark run, minutes long",
  "docs/mcp.md: pnpm parley token create --email you@example.com --name claude \\":
    "the command line, for a user of your own; test/cli.test.ts runs `token create`",
  "docs/operations.md: printf '%s' \"$OPENROUTER_KEY\" | pnpm parley providers add --kind openai_compatible --name OpenRouter \\":
    "the command line against the reader's OpenRouter account; test/cli.test.ts runs providers add, check and remove",
  "docs/mcp.md: npx @modelcontextprotocol/inspector": "opens the MCP Inspector's web page, a program of its own",
  "docs/evals.md: PARLEY_URL=https://parley.example.com PARLEY_TOKEN=pat_... pnpm parley eval run --pipeline 2 --cases evals/*.yaml":
    "the command line against a deployed server with the reader's case files; test/evals-cli.test.ts runs it",
  "docs/benchmarks.md: npx vitest run --project embedded packages/server/test/docs.browser.test.ts   # figures in test-results/docs-load.json":
    "runs a test suite",
  "docs/reliability.md: FUZZ_RUNS=150 npx vitest run --project embedded packages/server/test/fuzz.http.test.ts":
    "runs a test suite",
  "docs/reliability.md: npx tsx bench/body-limits.ts": "a benchmark run",
  "docs/reliability.md: FUZZ_RUNS=150 FUZZ_SEED=7 npx vitest run packages/server/test/fuzz.http.test.ts":
    "a longer run of the suite itself",
  "docs/deploy.md: sudo apt-get install -y postgresql-15 postgresql-server-dev-15 build-essential":
    "installs Postgres and builds pgvector on a host",
  "docs/deploy.md: sudo -u postgres psql -c \"create role parley login password 'a-long-random-password'\"":
    "sets up a Postgres server's role and database",
  "docs/deploy.md: git clone https://example.com/your/parley.git /opt/parley/src && cd /opt/parley/src   # or git pull":
    "builds and installs a release on a host",
  "docs/deploy.md: #!/bin/sh": "a wrapper script to save on a host, not commands",
  "docs/deploy.md: sudo systemctl daemon-reload": "systemd and the command line on a host",
  "docs/deploy.md: # the database, as its owner (custom format: compressed, restorable table by table); then the files":
    "backs up a Postgres server and a file store",
  "docs/deploy.md: sudo systemctl stop parley.target": "restores a Postgres server's backup",
  "docs/deploy.md: cd /opt/parley/src && git pull && pnpm install --frozen-lockfile && pnpm build":
    "an upgrade on a host",
  "docs/deploy.md: docker build -t parley .":
    "Docker, which test machines lack (scripts/docker-build-check.sh runs the image's build stage)",
  "docs/deploy.md: printf 'APP_SECRET=%s\\nPOSTGRES_PASSWORD=%s\\n' \"$(openssl rand -hex 32)\" \"$(openssl rand -hex 24)\" > .env":
    "Docker Compose, which test machines lack",
  "docs/deploy.md: docker compose exec -T postgres pg_dump -U parley -d parley -Fc > parley-$(date +%F).dump":
    "Docker Compose, which test machines lack"
}

/** The files the examples upload with `-F "files[]=@name"`: the reader's own, small stand-ins here. */
const uploads: Record<string, Buffer> = {
  "quote.pdf": Buffer.from("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"),
  "invoice.pdf": Buffer.from("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"),
  "list.pdf": Buffer.from("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"),
  "photo.jpg": Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0xff, 0xd9])
}

let server: Running | undefined
let dataDir: string
let workDir: string
let credentials: { token: string; channel: { client_id: string; client_secret: string } }
let telegram: ChildProcess | undefined

/** The bot token docs/channels.md connects with: Telegram's Bot API, played by a local fake that accepts it. */
const DOCS_BOT_TOKEN = "123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-ho"

beforeAll(async () => {
  dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-docs-"))
  workDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-docs-run-"))
  // in a process of its own: this one blocks while each document's shell runs
  telegram = spawn(Path.join(root, "node_modules/.bin/tsx"), [
    Path.join(__dirname, "support/fake-telegram-main.ts"),
    DOCS_BOT_TOKEN
  ], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  const telegramUrl = await new Promise<string>((resolve, reject) => {
    telegram!.stdout!.once("data", (chunk: Buffer) => resolve(chunk.toString("utf8").trim().split("\n")[0]!))
    telegram!.once("exit", (code) => reject(new Error(`the fake Bot API exited with ${code}`)))
  })
  // the defaults `pnpm start` runs with: private webhook and action targets refused
  server = await serve(dataDir, { OUTBOUND_ALLOW_PRIVATE: "false", TELEGRAM_API_URL: telegramUrl })
  credentials = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
  for (const [name, content] of Object.entries(uploads)) Fs.writeFileSync(Path.join(workDir, name), content)
})

afterAll(async () => {
  await stop(server)
  telegram?.kill()
  Fs.rmSync(dataDir, { recursive: true, force: true })
  Fs.rmSync(workDir, { recursive: true, force: true })
})

const blocks = shellBlocks(root)

/** Runs blocks of `all` (one document) the way a reader would after the first start. */
const run = (all: ReadonlyArray<Block>, indices: ReadonlyArray<number>) =>
  runDocument({
    all,
    indices,
    subs: {
      urls: [["http://127.0.0.1:3000", server!.api], ["http://127.0.0.1:3001", server!.receiver]],
      placeholders: {
        PARLEY_TOKEN: credentials.token,
        CLIENT: `${credentials.channel.client_id}:${credentials.channel.client_secret}`
      }
    },
    servers: [server!.api, server!.receiver],
    // what a reader has: the token the start banner tells them to export, nothing else of ours
    env: { HOME: workDir, PARLEY_TOKEN: credentials.token },
    cwd: workDir
  })

describe("the shell examples of README.md and docs/*.md", () => {
  it("are each run or skipped for a stated reason", () => {
    const keys = new Set(blocks.map(keyOf))
    expect(Object.keys(skipped).filter((key) => !keys.has(key)), "skip-list entries that name no block").toEqual([])
    const neither = blocks.filter((b) => !(keyOf(b) in skipped) && !isRunnable(b)).map((b) => `${where(b)} ${keyOf(b)}`)
    expect(neither, "blocks neither runnable (curl, or only exports) nor on the skip list").toEqual([])
    // shell under another tag would escape the run
    const otherShells = documents(root).flatMap((file) =>
      blocksOf(file, Fs.readFileSync(Path.join(root, file), "utf8"))
        .filter((b) => ["bash", "shell", "zsh", "console", "shell-session"].includes(b.lang))
        .map((b) => `${where(b)} ${b.lang}`)
    )
    expect(otherShells, "shell blocks not tagged sh").toEqual([])
  })

  it("report an answer other than the one shown, a 4xx shown as nothing, a capture that finds nothing", () => {
    const doc = blocksOf(
      "self-test.md",
      [
        "```sh",
        "curl -s http://127.0.0.1:3000/health",
        "# => 404",
        "curl -s http://127.0.0.1:3000/api/user/nothing -H \"Authorization: Bearer $PARLEY_TOKEN\"",
        "export ID=1   # the answer's data.id",
        "curl -s http://127.0.0.1:3000/health",
        "```",
        "",
        "```json",
        "{ \"status\": \"ok\", \"uptime\": 1 }",
        "```",
        ""
      ].join("\n")
    )
    const { problems, requests } = run(doc, [0])
    expect(requests).toBe(3)
    const health = `self-test.md:1 curl ${server!.api}/health`
    const nothing = `self-test.md:1 curl ${server!.api}/api/user/nothing`
    const notFound = `{"status":false,"code":404,"validation":[],"message":"Not found.","data":null}`
    expect(problems).toEqual([
      `self-test.md:1: line 4 of the block captures data.id, which answer 2 lacks: ${notFound}`,
      `${health}: 200, the doc shows 404: {"status":"ok"}`,
      `${nothing}: 404 (no answer shown, so 2xx expected): ${notFound}`,
      `${health}: the answer lacks uptime, which the doc shows: {"status":"ok"}`
    ])
  })

  // each document's shell has two minutes (a reply the examples wait for that never comes ends it)
  it("run in order against a fresh server and answer as they claim", { timeout: 600_000 }, () => {
    // a block neither runnable nor listed fails the test above and is not run here
    const runnable = blocks.map((block, index) => ({ block, index })).filter(({ block }) =>
      !(keyOf(block) in skipped) && isRunnable(block)
    )
    const problems: Array<string> = []
    let requests = 0
    for (const file of [...new Set(runnable.map(({ block }) => block.file))]) {
      const result = run(blocks, runnable.filter(({ block }) => block.file === file).map(({ index }) => index))
      problems.push(...result.problems.map((p) => p.startsWith("bash") ? `${file}: ${p}` : p))
      requests += result.requests
    }
    expect(problems).toEqual([])
    const report = { blocks: blocks.length, run: runnable.length, skipped: Object.keys(skipped).length, requests }
    Fs.mkdirSync(Path.join(root, "test-results"), { recursive: true })
    Fs.writeFileSync(Path.join(root, "test-results", "docs-examples.json"), JSON.stringify(report, null, 2))
    expect(runnable.length).toBeGreaterThan(0)
  })
})
