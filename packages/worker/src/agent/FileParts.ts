/**
 * A message's files as a model is given them (issue 40): an image as itself to a model that sees
 * images, else as a line that names it and says what the server could learn of it (a description, a transcript, a
 * document's text). The lines have fixed shapes so that the local model (LocalText.ts) can read them back.
 */
import type { Prompt } from "@effect/ai"
import type { ModelRef, TurnFile, TurnMessage } from "@parley/domain"

/** Whether images go to the model as themselves: only to a model of the catalogue with the `vision` capability. */
export const seesImages = (model: ModelRef | undefined) => model?.capabilities?.includes("vision") === true

/** A name as one plain token of a line: no line break, no bracket that would end the marker early. */
const clean = (text: string) => text.replace(/[\r\n]+/g, " ").replace(/[[\]]/g, "").trim() || "file"

/**
 * One file as text. `documentChars`: a document's text cut further (the router only needs what is asked about);
 * the server already cut it to what the model's context allows.
 */
export const fileLine = (file: TurnFile, documentChars?: number): string => {
  const name = clean(file.name)
  switch (file.type) {
    case "image":
      return file.description?.trim()
        ? `[image: ${name}] ${file.description.trim().replace(/\s+/g, " ")}`
        : `[image: ${name}]`
    case "audio":
      return file.transcript?.trim()
        ? `[voice note ${name}]: ${file.transcript.trim()}`
        : `[voice note ${name}: not transcribed]`
    case "document":
      if (file.text?.trim()) {
        const text = file.text.trim()
        return `[document ${name}]\n${
          documentChars !== undefined && text.length > documentChars ? `${text.slice(0, documentChars)}…` : text
        }`
      }
      return `[document: ${name}]`
    default:
      return `[${file.type}: ${name}]`
  }
}

/** An image the model is shown as itself. */
const shown = (file: TurnFile, vision: boolean): file is TurnFile & { readonly data: Uint8Array } =>
  vision && file.type === "image" && file.data !== undefined

/** What the contact wrote followed by a line for each file (none shown as itself), as one text. */
const textWith = (text: string, lines: ReadonlyArray<string>) =>
  [text.trim() === "" ? null : text, ...lines].filter((l) => l !== null).join("\n")

/** A message as text alone, its files as lines: for a prompt part that is text only (the router's transcript). */
export const messageText = (message: TurnMessage, documentChars?: number): string =>
  (message.files ?? []).length === 0
    ? message.text
    : textWith(message.text, (message.files ?? []).map((f) => fileLine(f, documentChars)))

/**
 * The content of a contact's message: its text as it is when it has no files; else the text and the files' lines as
 * one text part, then a file part for each image the model sees (an empty text is left out: the files say it all).
 */
export const userContent = (
  message: TurnMessage,
  vision: boolean
): string | ReadonlyArray<Prompt.UserMessagePartEncoded> => {
  const files = message.files ?? []
  if (files.length === 0) return message.text
  const text = textWith(message.text, files.filter((f) => !shown(f, vision)).map((f) => fileLine(f)))
  return [
    ...(text === "" ? [] : [{ type: "text" as const, text }]),
    ...files.filter((f) => shown(f, vision)).map((f) => ({
      type: "file" as const,
      mediaType: f.mimetype,
      fileName: f.name,
      data: f.data
    }))
  ]
}

/**
 * The conversation as prompt messages. The agent's own messages are text (a file an operator sent is named by its
 * line); a contact's carry their files (`vision`: images as themselves).
 */
export const historyMessages = (
  history: ReadonlyArray<TurnMessage>,
  vision: boolean
): Array<Prompt.UserMessageEncoded | Prompt.AssistantMessageEncoded> =>
  history.map((m) =>
    m.role === "user"
      ? { role: "user" as const, content: userContent(m, vision) }
      : { role: "assistant" as const, content: messageText(m) }
  )
