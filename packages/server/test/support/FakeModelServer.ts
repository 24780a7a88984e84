/**
 * A local model server playing the providers an operator can point Parley at, with their documented bodies and
 * error codes: OpenAI's API as Ollama, vLLM or OpenAI serve it (`/v1/chat/completions`, `/v1/models`,
 * `/v1/embeddings`, `/v1/audio/transcriptions`) and Google's Gemini API (`/v1beta/models/...`). Answers come from a
 * script per model (text, or tool calls); failures (429 with retry-after, 500, 503, a broken body, no answer at
 * all) are scripted for the next requests. Every request is recorded, so a test can check what was sent.
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { geminiAuth, geminiError, geminiRoute } from "./FakeGemini.js"
import { fileKey, openAiAuth, openAiError, openAiRoute } from "./FakeOpenAiCompatible.js"

export interface FakeUsage {
  readonly input: number
  readonly output: number
}

/** One answer of a model: text, or calls of tools (`arguments` as an object; sent as a JSON string). */
export type ScriptedAnswer =
  | { readonly text: string; readonly usage?: FakeUsage }
  | {
    readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown; readonly id?: string }>
    readonly usage?: FakeUsage
  }

export type ScriptedFailure =
  | { readonly kind: "status"; readonly status: 429 | 500 | 503; readonly retryAfter?: string }
  | { readonly kind: "malformed" }
  | { readonly kind: "hang" }

export interface FakeModel {
  readonly id: string
  /** false: a request declaring tools gets Ollama's 400 "does not support tools" */
  readonly tools?: boolean
  readonly ownedBy?: string
}

export interface FakeModelServerOptions {
  /** the Bearer key the OpenAI-compatible API wants; none: no key is checked */
  readonly apiKey?: string
  /** the key Gemini wants (`x-goog-api-key` or `?key=`); none: no key is checked */
  readonly geminiKey?: string
  readonly models?: ReadonlyArray<string | FakeModel>
  readonly geminiModels?: ReadonlyArray<string>
  readonly latencyMs?: number
  /** of the embedding vectors (default 8) */
  readonly dimensions?: number
  /** the answer when a model's script is empty */
  readonly text?: string
}

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly headers: Http.IncomingHttpHeaders
  /** the parsed JSON; for a multipart form, its fields (a file as `{ name, type, size }`) */
  readonly body: unknown
}

export interface FakeModelServer {
  readonly origin: string
  /** the OpenAI-compatible base URL: `{origin}/v1` */
  readonly openAiUrl: string
  /** what GoogleClient takes as `apiUrl` (it appends `/v1beta/...`) */
  readonly geminiUrl: string
  readonly requests: Array<RecordedRequest>
  /** waited before each answer */
  latencyMs: number
  /** answers `model` gives next, in order (OpenAI-compatible and Gemini alike) */
  readonly script: (model: string, ...answers: ReadonlyArray<ScriptedAnswer>) => void
  /** the next `times` requests (to any path holding `path`) fail so */
  readonly failNext: (failure: ScriptedFailure, options?: { readonly times?: number; readonly path?: string }) => void
  /** the text transcribing exactly these file bytes gives */
  readonly transcript: (content: string | Uint8Array, text: string) => void
  readonly addModel: (model: string | FakeModel) => void
  /** the vector the fake gives `text` (both APIs), for comparing */
  readonly embedding: (text: string) => Array<number>
  readonly close: () => Promise<void>
}

/** What the fake and its two halves (FakeOpenAiCompatible.ts, FakeGemini.ts) share. */
export interface FakeState {
  readonly options: FakeModelServerOptions
  readonly models: Map<string, FakeModel>
  readonly geminiModels: Set<string>
  readonly scripts: Map<string, Array<ScriptedAnswer>>
  /** the model's next scripted answer, else the default text */
  readonly next: (model: string) => ScriptedAnswer
  /** the tokens a text counts for, in usage: its words */
  readonly tokens: (text: string) => number
  readonly embed: (text: string) => Array<number>
  /** transcripts by the sha256 of the audio file's bytes */
  readonly transcripts: Map<string, string>
}

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

/** A hashed bag of words, normalised: texts sharing words are near, and the same text gives the same vector. */
const embedding = (text: string, dimensions: number): Array<number> => {
  const vector = new Array<number>(dimensions).fill(0)
  for (const word of words(text)) {
    const hash = createHash("sha256").update(word).digest()
    vector[hash.readUInt32BE(0) % dimensions]! += hash[4]! & 1 ? 1 : -1
  }
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0))
  return norm === 0 ? vector : vector.map((x) => x / norm)
}

export type Reply = (status: number, body: unknown, headers?: Record<string, string>) => void

const readForm = async (raw: Buffer, contentType: string) =>
  new Request("http://fake/", { method: "POST", headers: { "content-type": contentType }, body: Uint8Array.from(raw) })
    .formData()

const formRecord = (form: FormData) => {
  const record: Record<string, unknown> = {}
  form.forEach((value, name) => {
    record[name] = typeof value === "string" ? value : { name: value.name, type: value.type, size: value.size }
  })
  return record
}

export const startFakeModelServer = async (options: FakeModelServerOptions = {}): Promise<FakeModelServer> => {
  const toModel = (m: string | FakeModel): FakeModel => typeof m === "string" ? { id: m } : m
  const scripts = new Map<string, Array<ScriptedAnswer>>()
  const dimensions = options.dimensions ?? 8
  const state: FakeState = {
    options,
    models: new Map((options.models ?? ["fake-chat", "fake-embed", "whisper-1"]).map(toModel).map((m) => [m.id, m])),
    geminiModels: new Set(options.geminiModels ?? ["gemini-2.0-flash", "text-embedding-004"]),
    scripts,
    next: (model) => scripts.get(model)?.shift() ?? { text: options.text ?? "Hello from the fake model." },
    tokens: (text) => words(text).length,
    embed: (text) => embedding(text, dimensions),
    transcripts: new Map()
  }
  const failures: Array<{ failure: ScriptedFailure; path: string | undefined }> = []
  const requests: Array<RecordedRequest> = []

  const handle = async (req: Http.IncomingMessage, res: Http.ServerResponse) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const raw = Buffer.concat(chunks)
    const url = new URL(req.url ?? "/", "http://fake")
    const path = decodeURIComponent(url.pathname)
    const method = req.method ?? "GET"
    const contentType = req.headers["content-type"] ?? ""
    const form = contentType.startsWith("multipart/form-data") ? await readForm(raw, contentType) : undefined
    let body: unknown = undefined
    if (form !== undefined) body = formRecord(form)
    else if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString("utf8"))
      } catch {
        body = raw.toString("utf8")
      }
    }
    requests.push({ method, path, query: Object.fromEntries(url.searchParams), headers: req.headers, body })

    const reply: Reply = (status, payload, headers = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers })
      res.end(JSON.stringify(payload))
    }
    if (fake.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, fake.latencyMs))

    const gemini = path.startsWith("/v1beta/")
    const query = url.searchParams
    const authorized = gemini
      ? geminiAuth(options.geminiKey, req.headers["x-goog-api-key"], query.get("key"), reply)
      : openAiAuth(options.apiKey, req.headers.authorization, reply)
    if (!authorized) return
    const at = failures.findIndex((f) => f.path === undefined || path.includes(f.path))
    if (at !== -1) {
      const { failure } = failures.splice(at, 1)[0]!
      switch (failure.kind) {
        case "hang":
          return
        case "malformed":
          res.writeHead(200, { "content-type": "application/json" })
          return res.end("{\"id\":\"chatcmpl-broken\",\"choices\":[{\"message\":")
        case "status": {
          const [message, type, code] = failure.status === 429
            ? ["Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"]
            : failure.status === 503
            ? ["The engine is currently overloaded, please try again later.", "server_error", null]
            : ["The server had an error while processing your request. Sorry about that!", "server_error", null]
          const headers = failure.retryAfter === undefined ? {} : { "retry-after": failure.retryAfter }
          return gemini
            ? reply(failure.status, geminiError(failure.status, message), headers)
            : reply(failure.status, openAiError(message, type, code), headers)
        }
      }
    }
    return gemini
      ? geminiRoute(state, { method, path, body }, reply)
      : openAiRoute(state, { method, path, body, form }, reply)
  }
  const server = Http.createServer((req, res) => {
    // a fault of the fake itself answers 500 with its text rather than crashing the test worker
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" })
      res.end(`the fake model server failed: ${String(error)}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const fake: FakeModelServer = {
    origin,
    openAiUrl: `${origin}/v1`,
    geminiUrl: origin,
    requests,
    latencyMs: options.latencyMs ?? 0,
    script: (model, ...answers) => state.scripts.set(model, [...(state.scripts.get(model) ?? []), ...answers]),
    failNext: (failure, { path, times = 1 } = {}) => {
      for (let i = 0; i < times; i++) failures.push({ failure, path })
    },
    transcript: (content, text) => state.transcripts.set(fileKey(content), text),
    addModel: (model) => {
      const m = typeof model === "string" ? { id: model } : model
      state.models.set(m.id, m)
    },
    embedding: state.embed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return fake
}

/** The fake model server for the length of the scope. */
export const fakeModelServer = (options: FakeModelServerOptions = {}) =>
  Effect.acquireRelease(Effect.promise(() => startFakeModelServer(options)), (fake) => Effect.promise(fake.close))
