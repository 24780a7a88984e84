/**
 * The zip container of DOCX, XLSX and PPTX files, read with fflate under a cap: a small file whose parts inflate to
 * gigabytes (a zip bomb) is refused from its central directory before anything is inflated, and a part that inflates
 * to more than its directory entry declares is refused as soon as it does, so memory stays bounded whatever the file
 * claims. fflate reads the directory and finds each part's bytes; it is not left to inflate them, because it inflates
 * into a buffer of the declared size and, past its end, goes on decoding and silently drops the rest (a lying part
 * would cost the whole of its real size in time, and read as cut short). node:zlib inflates them instead: it stops at
 * `maxOutputLength` with an error.
 */
import { Unzip, unzipSync } from "fflate"
import type { AsyncFlateStreamHandler } from "fflate"
import { createInflateRaw, inflateRawSync } from "node:zlib"

/** What the parts of one office file may inflate to, all together: far more than any real document's XML. */
export const MAX_UNZIPPED_BYTES = 100 * 1024 * 1024
/** Parts one office file may have: a real one has tens, a few thousand with many images. */
const MAX_ENTRIES = 10_000
const MB = 1024 * 1024
/** Bytes fed to fflate's zip stream at a time: it reads the parts a file at a time, recursing once per part. */
const CHUNK = 64 * 1024
const XML_PART = /\.(xml|rels)$/i

/** The file is a zip whose parts inflate to more than MAX_UNZIPPED_BYTES, or to more than they declare. */
export class ZipTooLarge extends Error {
  override readonly name = "ZipTooLarge"
}

/** A part as the central directory declares it. */
export interface ZipEntry {
  readonly name: string
  /** 0 stored, 8 deflated */
  readonly compression: number
  readonly originalSize: number
}

/**
 * The entries of the zip's central directory, nothing inflated (fflate's filter sees each and declines it); throws
 * on bytes that are no zip, and on a zip over the caps.
 */
export const zipEntries = (bytes: Uint8Array): ReadonlyArray<ZipEntry> => {
  const entries: Array<ZipEntry> = []
  let total = 0
  unzipSync(bytes, {
    filter: ({ compression, name, originalSize }) => {
      if (entries.length >= MAX_ENTRIES) throw new ZipTooLarge(`it has more than ${MAX_ENTRIES} parts`)
      total += originalSize
      if (total > MAX_UNZIPPED_BYTES) {
        throw new ZipTooLarge(`its parts inflate to more than ${MAX_UNZIPPED_BYTES / MB} MB`)
      }
      entries.push({ name, compression, originalSize })
      return false
    }
  })
  return entries
}

/** fflate's decoder for deflated parts, registered in place of its own: it hands on the compressed bytes as they are. */
class Deflated {
  static readonly compression = 8
  ondata: AsyncFlateStreamHandler = () => {}
  push(chunk: Uint8Array<ArrayBuffer>, final: boolean) {
    this.ondata(null, chunk, final)
  }
}

interface RawPart {
  readonly entry: ZipEntry
  /** as the part's local header says: what its bytes are */
  readonly compression: number
  readonly bytes: Uint8Array
}

const concat = (chunks: ReadonlyArray<Uint8Array>) => chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)

/** The stored or still deflated bytes of the directory's `entries`, found by fflate's zip stream. */
const rawParts = (bytes: Uint8Array, entries: ReadonlyArray<ZipEntry>): Map<string, RawPart> => {
  const byName = new Map(entries.map((entry) => [entry.name, entry]))
  const chunks = new Map<string, { compression: number; chunks: Array<Uint8Array> }>()
  const unzip = new Unzip((file) => {
    // a part the directory does not list (or one met a second time in the stream) is not read
    if (!byName.has(file.name) || chunks.has(file.name)) return
    const part = { compression: file.compression, chunks: [] as Array<Uint8Array> }
    chunks.set(file.name, part)
    file.ondata = (error, data) => {
      if (error !== null) throw error
      part.chunks.push(data)
    }
    file.start()
  })
  unzip.register(Deflated)
  for (let at = 0; at < bytes.byteLength; at += CHUNK) {
    unzip.push(bytes.subarray(at, at + CHUNK), at + CHUNK >= bytes.byteLength)
  }
  const out = new Map<string, RawPart>()
  for (const [name, part] of chunks) {
    out.set(name, { entry: byName.get(name)!, compression: part.compression, bytes: concat(part.chunks) })
  }
  return out
}

const overDeclared = (entry: ZipEntry) =>
  new ZipTooLarge(`its part ${entry.name} inflates to more than the ${entry.originalSize} bytes it declares`)

/** The part's bytes, inflated to at most the size it declares. */
const inflated = ({ bytes, compression, entry }: RawPart): Uint8Array => {
  if (compression === 0) {
    if (bytes.byteLength > entry.originalSize) throw overDeclared(entry)
    return bytes
  }
  if (compression !== 8) throw new Error(`part ${entry.name} uses compression method ${compression}`)
  try {
    // zlib stops at maxOutputLength: a lying part costs no more memory than it declared
    return inflateRawSync(bytes, { maxOutputLength: Math.max(1, entry.originalSize) })
  } catch (cause) {
    if (cause instanceof RangeError) throw overDeclared(entry)
    throw cause
  }
}

/** Inflates the part only to count its bytes, a chunk at a time; rejects once it passes what it declares. */
const checkInflated = ({ bytes, entry }: RawPart) =>
  new Promise<void>((resolve, reject) => {
    const inflate = createInflateRaw()
    let seen = 0
    inflate.on("data", (chunk: Buffer) => {
      seen += chunk.byteLength
      if (seen > entry.originalSize) {
        inflate.destroy()
        reject(overDeclared(entry))
      }
    })
    inflate.on("error", reject)
    inflate.on("end", () => resolve())
    inflate.end(bytes)
  })

/**
 * Checks a zip another library will inflate whole (mammoth, through jszip, checks the sizes only after inflating): its
 * declared sizes against the caps, then each deflated XML part inflated and counted, never held, against its own size.
 */
export const checkZip = async (bytes: Uint8Array): Promise<void> => {
  const xml = zipEntries(bytes).filter((entry) => entry.compression === 8 && XML_PART.test(entry.name))
  const parts = rawParts(bytes, xml)
  for (const part of parts.values()) {
    if (part.compression === 8) await checkInflated(part)
  }
}

/** An office file's XML parts, each inflated (capped) when it is read. */
export interface OfficeZip {
  /** every part's path in the zip, in the directory's order */
  readonly names: ReadonlyArray<string>
  /** the text of the part named `name` (its path, without a leading slash), undefined without it */
  readonly text: (name: string) => string | undefined
}

/** Opens an office file: throws on bytes that are no zip, and on a zip over the caps. */
export const openZip = (bytes: Uint8Array): OfficeZip => {
  const entries = zipEntries(bytes)
  // only XML parts are read: an image's bytes are left where they are
  const parts = rawParts(bytes, entries.filter((entry) => XML_PART.test(entry.name)))
  const decoder = new TextDecoder()
  return {
    names: entries.map((entry) => entry.name),
    text: (name) => {
      const part = parts.get(name)
      return part === undefined ? undefined : decoder.decode(inflated(part))
    }
  }
}
