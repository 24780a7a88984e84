/**
 * What a model is given of a contact's files (docs/agent.md, "Images, voice notes and documents"): an image's bytes
 * for a model that sees images, else the one-line description the pipeline's `vision_model_id` writes; a voice note's
 * transcript (`transcription_model_id`, an OpenAI-compatible `/audio/transcriptions`); a document's text, bounded by
 * the model's context window. A description or transcript is written once, onto the message's file entry, and read
 * from there afterwards (the console shows it; a repeated turn does not pay for it twice). What fails is logged and
 * the file goes to the model as its name: a turn never fails for a file.
 */
import { LanguageModel, Prompt } from "@effect/ai"
import { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import type { ModelRef, TurnFile, TurnMessage } from "@parley/domain"
import { costOf } from "@parley/worker"
import { Effect, Option, Schema } from "effect"
import { extractText } from "../files/Extract.js"
import { FileStorage } from "../files/FileStorage.js"
import { ProviderEndpoints } from "../models/ProviderEndpoints.js"
import * as MessageWrites from "../tables/MessageWrites.js"
import * as OpenAiCompatible from "./OpenAiCompatible.js"
import { RemoteModels } from "./Providers.js"

const StoredFile = Schema.Struct({
  path: Schema.String,
  mimetype: Schema.String,
  type: Schema.Literal("image", "video", "audio", "document", "file"),
  name: Schema.String,
  size: Schema.optional(Schema.Number),
  transcript: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String)
})
const decodeFile = Schema.decodeUnknownOption(StoredFile)

/** Bytes an image may have to go to a model as it is (providers cap inline images near this). */
const MAX_IMAGE_BYTES = 5 * 1024 * 1024
/** Bytes a voice note may have to be transcribed (OpenAI's and whisper servers' limit). */
const MAX_AUDIO_BYTES = 25 * 1024 * 1024
/** A document's share of the model's context window, in characters (about four a token), and its ceiling. */
const DOCUMENT_SHARE = 0.5
const MAX_DOCUMENT_CHARS = 200_000
const DESCRIBE = "Describe this image in one short line for someone who cannot see it. Reply with the line only."

export interface MediaModels {
  /** the models that may answer (the pipeline's and its routing tiers'): bytes go when one of them sees images */
  readonly answering: ReadonlyArray<ModelRef>
  readonly vision: ModelRef | null
  readonly transcription: ModelRef | null
}

export interface HistoryMessage {
  readonly id: string
  readonly role: "user" | "assistant"
  readonly message: string | null
  readonly files: ReadonlyArray<unknown>
}

/** Tokens and USD the turn spent on its files (descriptions, transcripts), added to the reply's. */
export interface MediaUsage {
  inputTokens: number
  outputTokens: number
  cost: number
}

export class TurnMedia extends Effect.Service<TurnMedia>()("@parley/server/TurnMedia", {
  dependencies: [FileStorage.Default, ProviderEndpoints.Default, RemoteModels.Default, NodeHttpClient.layerUndici],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const storage = yield* FileStorage
    const endpoints = yield* ProviderEndpoints
    const remote = yield* RemoteModels
    const http = yield* HttpClient.HttpClient
    const documents = new Map<string, string>()

    const bytesOf = (path: string, mimetype: string, max: number) =>
      storage.blob(path, mimetype).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.succeed(Option.none<Uint8Array>()),
          onSome: (blob) =>
            blob.size > max
              ? Effect.succeed(Option.none<Uint8Array>())
              : Effect.promise(() => blob.arrayBuffer()).pipe(Effect.map((b) => Option.some(new Uint8Array(b))))
        }))
      )

    /** Writes a description or transcript onto the message's file entry (the one place it is kept). */
    const remember = (messageId: string, index: number, field: "transcript" | "description", text: string) =>
      MessageWrites.update(sql, {
        files: sql`jsonb_set(files, ${`{${index},${field}}`}::text[], to_jsonb(${text}::text))`
      }, sql`where id = ${messageId}`).pipe(Effect.orDie, Effect.asVoid)

    const describe = (model: ModelRef, data: Uint8Array, mimetype: string, usage: MediaUsage) =>
      Effect.gen(function*() {
        const endpoint = yield* endpoints.of(model.providerId ?? 0, model.providerRevision)
        const lm = yield* remote.forEndpoint(endpoint, model.model)
        const prompt = Prompt.make([{
          role: "user",
          content: [{ type: "text", text: DESCRIBE }, { type: "file", mediaType: mimetype, data }]
        }])
        const response = yield* LanguageModel.generateText({ prompt, toolChoice: "none" }).pipe(
          Effect.provideService(LanguageModel.LanguageModel, lm)
        )
        const u = { inputTokens: response.usage.inputTokens ?? 0, outputTokens: response.usage.outputTokens ?? 0 }
        usage.inputTokens += u.inputTokens
        usage.outputTokens += u.outputTokens
        usage.cost += costOf(model, u)
        return response.text.trim().split("\n")[0]!.slice(0, 500)
      })

    const transcribe = (model: ModelRef, data: Uint8Array, file: typeof StoredFile.Type, usage: MediaUsage) =>
      Effect.gen(function*() {
        const endpoint = yield* endpoints.of(model.providerId ?? 0, model.providerRevision)
        const client = yield* OpenAiCompatible.make(endpoint).pipe(Effect.provideService(HttpClient.HttpClient, http))
        const { text } = yield* client.transcribe(model.model, data, file.name, file.mimetype)
        // transcription servers answer with the text alone: its length stands for the output tokens (about 4
        // characters each), priced as the model's output
        const outputTokens = Math.ceil(text.length / 4)
        usage.outputTokens += outputTokens
        usage.cost += costOf(model, { inputTokens: 0, outputTokens })
        return text.trim().slice(0, 20_000)
      })

    const documentText = (file: typeof StoredFile.Type, maxChars: number) =>
      Effect.gen(function*() {
        const kept = documents.get(file.path)
        if (kept !== undefined) return kept.slice(0, maxChars)
        const bytes = yield* bytesOf(file.path, file.mimetype, Number.MAX_SAFE_INTEGER)
        if (Option.isNone(bytes)) return undefined
        const { text } = yield* extractText(bytes.value, file.mimetype, file.name, MAX_DOCUMENT_CHARS)
        if (documents.size >= 200) documents.clear()
        documents.set(file.path, text)
        return text.slice(0, maxChars)
      })

    const logged = <A>(what: string, effect: Effect.Effect<A, unknown>) =>
      effect.pipe(
        Effect.map((a): A | undefined => a),
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logWarning(`A contact's file could not be ${what}`, cause), undefined)
        )
      )

    /** The memory window with each message's files as the model gets them, and what making them cost. */
    const messages = Effect.fn("TurnMedia.messages")(
      function*(history: ReadonlyArray<HistoryMessage>, models: MediaModels) {
        const usage: MediaUsage = { inputTokens: 0, outputTokens: 0, cost: 0 }
        const sees = models.answering.some((m) => m.capabilities?.includes("vision") === true)
        const blind = models.answering.some((m) => m.capabilities?.includes("vision") !== true)
        const window = Math.min(...models.answering.map((m) => m.contextWindow ?? 8192))
        const documentChars = Math.min(MAX_DOCUMENT_CHARS, Math.floor(window * 4 * DOCUMENT_SHARE))
        // only the turn's own messages (after the last reply) get bytes and new descriptions or transcripts
        const lastReply = history.map((m) => m.role).lastIndexOf("assistant")
        const out: Array<TurnMessage> = []
        for (const [i, m] of history.entries()) {
          const text = m.message ?? ""
          if (m.files.length === 0 || m.role !== "user") {
            out.push({ role: m.role, text })
            continue
          }
          const latest = i > lastReply
          const files: Array<TurnFile> = []
          for (const [index, raw] of m.files.entries()) {
            const file = decodeFile(raw)
            if (Option.isNone(file)) continue
            const f = file.value
            const base = { name: f.name, mimetype: f.mimetype, type: f.type }
            if (f.type === "image") {
              const data = latest && (sees || (blind && models.vision !== null && f.description === undefined))
                ? Option.getOrUndefined(yield* bytesOf(f.path, f.mimetype, MAX_IMAGE_BYTES))
                : undefined
              let description = f.description
              if (description === undefined && blind && models.vision !== null && data !== undefined) {
                description = yield* logged("described", describe(models.vision, data, f.mimetype, usage))
                if (description !== undefined && description !== "") {
                  yield* remember(m.id, index, "description", description)
                }
              }
              files.push({ ...base, ...(sees && data ? { data } : {}), ...(description ? { description } : {}) })
            } else if (f.type === "audio") {
              let transcript = f.transcript
              if (transcript === undefined && latest && models.transcription !== null) {
                const data = Option.getOrUndefined(yield* bytesOf(f.path, f.mimetype, MAX_AUDIO_BYTES))
                if (data !== undefined) {
                  transcript = yield* logged("transcribed", transcribe(models.transcription, data, f, usage))
                  if (transcript !== undefined) yield* remember(m.id, index, "transcript", transcript)
                }
              }
              files.push({ ...base, ...(transcript !== undefined ? { transcript } : {}) })
            } else if (f.type === "document" || f.mimetype.startsWith("text/")) {
              // a file whose type has no reader (a zip, a spreadsheet) goes by its name, without a warning each turn
              const extracted = yield* logged(
                "read",
                documentText(f, documentChars).pipe(
                  Effect.catchIf((e) => e._tag === "ExtractFailed" && e.reason === "unsupported", () => Effect.void)
                )
              )
              // a text file read is a document to the model
              files.push(extracted ? { ...base, type: "document", text: extracted } : base)
            } else {
              files.push(base)
            }
          }
          out.push({ role: m.role, text, files })
        }
        return { messages: out, usage }
      }
    )

    return { messages }
  })
}) {}
