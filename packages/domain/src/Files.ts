import { Schema } from "effect"
import { maxChars } from "./Schemas.js"

export const FileType = Schema.Literal("image", "video", "audio", "document", "file")
export type FileType = typeof FileType.Type

/** SPEC.md 2.5: by MIME type family; application/* is a document, anything else a file. */
export const classifyFile = (mimetype: string): FileType => {
  const family = mimetype.toLowerCase().split("/")[0]
  switch (family) {
    case "image":
      return "image"
    case "video":
      return "video"
    case "audio":
      return "audio"
    case "application":
      return "document"
    default:
      return "file"
  }
}

/** SPEC.md 2.5, as stored on a message. */
export class FileEntry extends Schema.Class<FileEntry>("FileEntry")({
  path: Schema.String.annotations({ description: "Private storage key" }),
  mimetype: Schema.String,
  type: FileType,
  size: Schema.Int,
  name: Schema.String,
  /** a voice note's transcript, written once by the pipeline's transcription model (docs/agent.md) */
  transcript: Schema.optional(Schema.String),
  /** an image's one-line description, written once by the pipeline's vision model (docs/agent.md) */
  description: Schema.optional(Schema.String)
}) {}

/** As answered: the entry plus a signed, expiring download URL (files are never public). */
export class FileEntryWithUrl extends FileEntry.extend<FileEntryWithUrl>("FileEntryWithUrl")({
  url: Schema.String.annotations({ description: "Signed download URL, valid for a limited time" })
}) {}

export class Attachment extends Schema.Class<Attachment>("Attachment")({
  type: Schema.String.pipe(maxChars(50)),
  url: Schema.String.pipe(
    maxChars(2048),
    Schema.filter((s) => /^https?:\/\/\S+$/i.test(s) || "must be an http or https URL")
  ),
  name: Schema.optional(Schema.String.pipe(maxChars(255)))
}) {}

/** Storage keys are ours: relative, no `..`, no backslashes, no empty segments. */
export const isSafeStorageKey = (key: string) =>
  key.length > 0 && key.length <= 1024 && !key.startsWith("/") && !key.includes("\\") &&
  key.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..")
