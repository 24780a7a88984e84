/**
 * The zip container of DOCX, XLSX and PPTX files, read with a cap: a small file whose parts inflate to gigabytes (a
 * zip bomb) is refused from its central directory before anything is inflated, and a part that inflates to more than
 * its directory entry declares is refused as soon as it does, so memory stays bounded whatever the file claims.
 */
import { createInflateRaw, inflateRawSync } from "node:zlib"

/** What the parts of one office file may inflate to, all together: far more than any real document's XML. */
export const MAX_UNZIPPED_BYTES = 100 * 1024 * 1024
/** Parts one office file may have: a real one has tens, a few thousand with many images. */
const MAX_ENTRIES = 10_000

/** The file is a zip whose parts inflate to more than MAX_UNZIPPED_BYTES, or to more than they declare. */
export class ZipTooLarge extends Error {
  override readonly name = "ZipTooLarge"
}

export interface ZipEntry {
  readonly name: string
  /** 0 stored, 8 deflated */
  readonly method: number
  readonly compressedSize: number
  readonly uncompressedSize: number
  readonly localOffset: number
}

const EOCD = 0x06054b50
const CENTRAL = 0x02014b50
const LOCAL = 0x04034b50
const MB = 1024 * 1024

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/** The entries of the zip's central directory; throws on bytes that are no zip, and on a zip over the caps. */
export const zipEntries = (bytes: Uint8Array): ReadonlyArray<ZipEntry> => {
  const data = view(bytes)
  let end = -1
  // the end record is in the last 22 bytes plus a comment of at most 65,535
  for (let at = bytes.byteLength - 22; at >= Math.max(0, bytes.byteLength - 22 - 65_535); at--) {
    if (data.getUint32(at, true) === EOCD) {
      end = at
      break
    }
  }
  if (end < 0) throw new Error("not a zip file: no end of central directory")
  const count = data.getUint16(end + 10, true)
  let at = data.getUint32(end + 16, true)
  // 0xFFFF entries or a 4 GB offset mark a zip64 file: no office document this small needs one
  if (count === 0xffff || at === 0xffffffff) throw new ZipTooLarge("a zip64 archive")
  if (count > MAX_ENTRIES) throw new ZipTooLarge(`${count} parts, more than ${MAX_ENTRIES}`)
  const decoder = new TextDecoder()
  const entries: Array<ZipEntry> = []
  let total = 0
  for (let i = 0; i < count; i++) {
    if (at + 46 > bytes.byteLength || data.getUint32(at, true) !== CENTRAL) throw new Error("corrupt central directory")
    const nameLength = data.getUint16(at + 28, true)
    const entry: ZipEntry = {
      name: decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength)),
      method: data.getUint16(at + 10, true),
      compressedSize: data.getUint32(at + 20, true),
      uncompressedSize: data.getUint32(at + 24, true),
      localOffset: data.getUint32(at + 42, true)
    }
    total += entry.uncompressedSize
    if (total > MAX_UNZIPPED_BYTES) {
      throw new ZipTooLarge(`its parts inflate to more than ${MAX_UNZIPPED_BYTES / MB} MB`)
    }
    entries.push(entry)
    at += 46 + nameLength + data.getUint16(at + 30, true) + data.getUint16(at + 32, true)
  }
  return entries
}

/** The entry's compressed bytes, found through its local header (whose own sizes may be zero: the directory's count). */
const rawData = (bytes: Uint8Array, entry: ZipEntry) => {
  const data = view(bytes)
  const at = entry.localOffset
  if (at + 30 > bytes.byteLength || data.getUint32(at, true) !== LOCAL) throw new Error(`corrupt part ${entry.name}`)
  const start = at + 30 + data.getUint16(at + 26, true) + data.getUint16(at + 28, true)
  if (start + entry.compressedSize > bytes.byteLength) throw new Error(`truncated part ${entry.name}`)
  return bytes.subarray(start, start + entry.compressedSize)
}

const overDeclared = (entry: ZipEntry) =>
  new ZipTooLarge(`its part ${entry.name} inflates to more than the ${entry.uncompressedSize} bytes it declares`)

/** The entry's bytes, inflated to at most the size it declares. */
export const readEntry = (bytes: Uint8Array, entry: ZipEntry): Uint8Array => {
  const raw = rawData(bytes, entry)
  if (entry.method === 0) {
    if (raw.byteLength !== entry.uncompressedSize) throw overDeclared(entry)
    return raw
  }
  if (entry.method !== 8) throw new Error(`part ${entry.name} uses compression method ${entry.method}`)
  try {
    // zlib stops at maxOutputLength: a lying entry costs no more memory than it declared
    return inflateRawSync(raw, { maxOutputLength: Math.max(1, entry.uncompressedSize) })
  } catch (cause) {
    if (cause instanceof RangeError) throw overDeclared(entry)
    throw cause
  }
}

/** Inflates the entry only to count its bytes, a chunk at a time; rejects once it passes what it declares. */
const checkInflated = (bytes: Uint8Array, entry: ZipEntry) =>
  new Promise<void>((resolve, reject) => {
    const inflate = createInflateRaw()
    let seen = 0
    inflate.on("data", (chunk: Buffer) => {
      seen += chunk.byteLength
      if (seen > entry.uncompressedSize) {
        inflate.destroy()
        reject(overDeclared(entry))
      }
    })
    inflate.on("error", reject)
    inflate.on("end", () => resolve())
    inflate.end(rawData(bytes, entry))
  })

/**
 * Checks a zip another library will inflate whole (mammoth, through jszip, checks the sizes only after inflating): its
 * declared sizes against the caps, then each deflated XML part inflated and counted, never held, against its own size.
 */
export const checkZip = async (bytes: Uint8Array): Promise<void> => {
  for (const entry of zipEntries(bytes)) {
    if (entry.method === 8 && /\.(xml|rels)$/i.test(entry.name)) await checkInflated(bytes, entry)
  }
}

/** The text of the part named `name` (its path in the zip, without a leading slash), undefined without it. */
export const readText = (bytes: Uint8Array, entries: ReadonlyArray<ZipEntry>, name: string) => {
  const entry = entries.find((e) => e.name === name)
  return entry === undefined ? undefined : new TextDecoder().decode(readEntry(bytes, entry))
}

const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: "\"", apos: "'" }

/** XML text with its entities and character references replaced. */
export const decodeXml = (text: string) =>
  text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] !== "#") return ENTITIES[name] ?? whole
    const code = name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1))
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
  })

/** The attributes of a start tag (`<sheet name="A" r:id="rId1">`), by their qualified names. */
export const attributesOf = (tag: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const m of tag.matchAll(/([\w:.-]+)\s*=\s*"([^"]*)"/g)) out[m[1]!] = decodeXml(m[2]!)
  return out
}

/** The targets of a relationships part by their ids, as zip paths resolved against the folder `base`. */
export const relationships = (xml: string | undefined, base: string): Map<string, string> => {
  const out = new Map<string, string>()
  for (const m of (xml ?? "").matchAll(/<Relationship\b[^>]*>/g)) {
    const { Id, Target, TargetMode } = attributesOf(m[0])
    if (Id === undefined || Target === undefined || TargetMode === "External") continue
    const parts = Target.startsWith("/") ? [] : base.split("/").filter((p) => p !== "")
    for (const part of Target.split("/")) {
      if (part === "..") parts.pop()
      else if (part !== "." && part !== "") parts.push(part)
    }
    out.set(Id, parts.join("/"))
  }
  return out
}
