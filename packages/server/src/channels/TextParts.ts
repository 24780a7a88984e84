/**
 * A message a provider takes as several (a text over its limit, files each their own message): cut into parts, and
 * sent part by part so that a retry sends only what an earlier attempt did not get out.
 */
import { SendFailure, type Sent } from "@parley/domain"
import { Effect } from "effect"

/**
 * Text cut into parts of at most `max` characters (a provider's limit on one message), at a paragraph, line or word
 * break where there is one.
 */
export const splitText = (text: string, max: number): ReadonlyArray<string> => {
  const parts: Array<string> = []
  let rest = text
  while (rest.length > max) {
    const window = rest.slice(0, max)
    // a paragraph break in the second half, else a line break, else a word break, else the limit itself
    const at = [window.lastIndexOf("\n\n"), window.lastIndexOf("\n"), window.lastIndexOf(" ")].find((cut) =>
      cut > max / 2
    ) ?? max
    parts.push(rest.slice(0, at).trimEnd())
    rest = rest.slice(at).trimStart()
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest)
  return parts
}

/** One part as the provider took it: the call's status and answer, and the provider's id of the part. */
export interface PartSent {
  readonly status: number
  readonly body: string
  readonly id: string | undefined
}

/**
 * Each part from `fromPart` on (the parts an earlier attempt sent are not sent again), in order; a failure after
 * the first says how many of this attempt's parts went out, and their ids, so they are kept and not resent.
 */
export const sendInParts = <P, R>(
  parts: ReadonlyArray<P>,
  fromPart: number,
  send: (part: P, index: number) => Effect.Effect<PartSent, SendFailure, R>
): Effect.Effect<Sent, SendFailure, R> =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    let last: PartSent = { status: 200, body: "", id: undefined }
    for (const [i, part] of parts.entries()) {
      if (i < fromPart) continue
      last = yield* send(part, i).pipe(
        Effect.mapError((e) =>
          i === fromPart ? e : new SendFailure({
            kind: e.kind,
            message: e.message,
            status: e.status,
            code: e.code,
            excerpt: e.excerpt,
            ...(e.retryAfterMs === undefined ? {} : { retryAfterMs: e.retryAfterMs }),
            sent: { parts: i - fromPart, ids: [...ids] }
          })
        )
      )
      if (last.id !== undefined) ids.push(last.id)
    }
    return { providerMessageIds: ids, status: last.status, excerpt: last.body.slice(0, 1000) }
  })

/** What a file is to a provider that sends images, videos and audio each their own way, and anything else as a file. */
export const mediaKind = (type: string, mimetype: string): "image" | "video" | "audio" | "other" =>
  type === "image" || mimetype.startsWith("image/")
    ? "image"
    : type === "video" || mimetype.startsWith("video/")
    ? "video"
    : type === "audio" || mimetype.startsWith("audio/")
    ? "audio"
    : "other"
