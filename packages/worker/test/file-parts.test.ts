/**
 * A contact's files in the prompt (agent/FileParts.ts through Prompting.ts): an image as itself to a model that sees
 * images, else as a line with its description; a voice note's transcript; a document's text; an empty text with files.
 * Then the local model's answers through Agent.reply: what it says of an image or voice note it has no words for,
 * and a transcript or description read as the contact's words. No database, no server.
 */
import type { Prompt } from "@effect/ai"
import { describe, expect, it } from "@effect/vitest"
import type { ModelRef, TurnContext, TurnFile, TurnMessage } from "@parley/domain"
import { Effect, Layer } from "effect"
import { CANNOT_HEAR, CANNOT_SEE } from "../src/agent/LocalText.js"
import { Agent, makeLocalModel, ModelRegistry, Prompting } from "../src/index.js"

const model = (capabilities: ModelRef["capabilities"] = []): ModelRef => ({
  id: 1,
  provider: "local",
  model: "parley-local",
  inputPricePerMillion: 0,
  outputPricePerMillion: 0,
  capabilities
})

const context = (history: ReadonlyArray<TurnMessage>, over: Partial<TurnContext> = {}): TurnContext => ({
  conversationId: "c1",
  workspaceId: 1,
  pipelineId: 1,
  pipelineName: "Sales",
  opportunityId: null,
  agentType: { name: "Sales", description: null },
  persona: null,
  instructions: null,
  language: "English",
  dialect: null,
  temperature: 0,
  stage: null,
  stages: [],
  contact: { name: null, email: null, phone: null, identifier: null },
  context: {},
  history,
  knowledge: [{ pointId: "p1", source: "plans", text: "The annual plan costs 990 euros per year." }],
  model: model(),
  routing: null,
  contextMessageCount: 10,
  isEval: false,
  ...over
})

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47])
const photo: TurnFile = { name: "bike.png", mimetype: "image/png", type: "image", data: PNG }
const said = (text: string, ...files: ReadonlyArray<TurnFile>): TurnMessage => ({ role: "user", text, files })

/** The last user message of a prompt: its parts, as the provider gets them. */
const lastUser = (prompt: Prompt.Prompt) => {
  const message = prompt.content.filter((m) => m.role === "user").at(-1)!
  return message.content as ReadonlyArray<Prompt.UserMessagePart>
}
const textIn = (parts: ReadonlyArray<Prompt.UserMessagePart>) =>
  parts.filter((p) => p.type === "text").map((p) => p.text).join("\n")

describe("files in the prompt", () => {
  it("gives an image as a file part to a model with vision, and as its description line to one without", () => {
    const ctx = context([said("What is this?", { ...photo, description: "A red bicycle." })])
    const seen = lastUser(Prompting.replyPrompt(ctx, null, model(["tools", "vision"])))
    expect(textIn(seen)).toBe("What is this?")
    expect(seen.find((p) => p.type === "file")).toMatchObject({
      mediaType: "image/png",
      fileName: "bike.png",
      data: PNG
    })

    const described = lastUser(Prompting.replyPrompt(ctx, null))
    expect(described.some((p) => p.type === "file")).toBe(false)
    expect(textIn(described)).toBe("What is this?\n[image: bike.png] A red bicycle.")
    expect(textIn(lastUser(Prompting.replyPrompt(context([said("", photo)]), null)))).toBe("[image: bike.png]")
  })

  it("writes voice notes, documents and other files as lines, and leaves out an empty text", () => {
    const ctx = context([
      said(
        "",
        { name: "note.ogg", mimetype: "audio/ogg", type: "audio", transcript: "Is support open on Sunday?" },
        { name: "late.ogg", mimetype: "audio/ogg", type: "audio" },
        { name: "offer.pdf", mimetype: "application/pdf", type: "document", text: "Offer for ACME\nDelivery in May" },
        { name: "scan.pdf", mimetype: "application/pdf", type: "document" },
        { name: "clip.mp4", mimetype: "video/mp4", type: "video" }
      )
    ])
    expect(textIn(lastUser(Prompting.bridgePrompt(ctx, false)))).toBe(
      [
        "[voice note note.ogg]: Is support open on Sunday?",
        "[voice note late.ogg: not transcribed]",
        "[document offer.pdf]\nOffer for ACME\nDelivery in May",
        "[document: scan.pdf]",
        "[video: clip.mp4]"
      ].join("\n")
    )
  })

  it("follows the model each prompt is for: the routed tier's, the pipeline's, text only for an extraction", () => {
    const vision = context([said("Look", photo)], { model: model(["vision"]) })
    expect(lastUser(Prompting.replyPrompt(vision, null)).some((p) => p.type === "file")).toBe(true)
    expect(lastUser(Prompting.replyPrompt(vision, null, model())).some((p) => p.type === "file")).toBe(false)
    for (const prompt of [Prompting.openingPrompt(vision), Prompting.summaryPrompt(vision)]) {
      expect(lastUser(prompt).some((p) => p.type === "file")).toBe(true)
    }
    expect(textIn(lastUser(Prompting.extractionPrompt(vision, "email", "the e-mail address")))).toBe(
      "Look\n[image: bike.png]"
    )
    // the router reads a document's beginning, not all of it
    const long = context([said("Compare", {
      name: "a.txt",
      mimetype: "text/plain",
      type: "document",
      text: "x".repeat(2000)
    })])
    expect(textIn(lastUser(Prompting.routerPrompt(long, null))).length).toBeLessThan(600)
  })

  it("keeps a message without files as its text", () => {
    expect(textIn(lastUser(Prompting.replyPrompt(context([{ role: "user", text: "Hello" }]), null)))).toBe("Hello")
  })
})

/** The turn's reply from the local model, as the worker makes it. */
const replyTo = (ctx: TurnContext) =>
  Agent.reply(ctx).pipe(
    Effect.map((draft) => draft.text),
    Effect.provide(Layer.effect(
      ModelRegistry,
      Effect.map(makeLocalModel(), (local) => ({ languageModel: () => Effect.succeed(local) }))
    ))
  )

describe("the local model and files", () => {
  it.effect("says it cannot see an image it has no description of, even shown as itself", () =>
    Effect.gen(function*() {
      expect(yield* replyTo(context([said("", photo)]))).toBe(CANNOT_SEE)
      expect(yield* replyTo(context([said("", photo)], { model: model(["vision"]) }))).toBe(CANNOT_SEE)
      // the words beside it are still answered
      expect(yield* replyTo(context([said("And the annual plan price?", photo)]))).toBe(
        `${CANNOT_SEE} The annual plan costs 990 euros per year.`
      )
    }))

  it.effect("says it cannot listen to a voice note without transcript", () =>
    Effect.gen(function*() {
      const note: TurnFile = { name: "v.ogg", mimetype: "audio/ogg", type: "audio" }
      expect(yield* replyTo(context([said("", note)]))).toBe(CANNOT_HEAR)
    }))

  it.effect("reads a transcript or a description as the contact's words", () =>
    Effect.gen(function*() {
      const note: TurnFile = {
        name: "v.ogg",
        mimetype: "audio/ogg",
        type: "audio",
        transcript: "How much is the annual plan?"
      }
      expect(yield* replyTo(context([said("", note)]))).toBe("The annual plan costs 990 euros per year.")
      const described = { ...photo, description: "A screenshot of the annual plan's price page." }
      expect(yield* replyTo(context([said("", described)]))).toBe("The annual plan costs 990 euros per year.")
    }))
})
