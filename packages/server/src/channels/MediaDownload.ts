/**
 * A contact's file as a provider serves it, streamed into storage by the inbound path (ProviderInbound.ts): every
 * adapter downloads the same way, bounded in size and in stall time, so no provider's file is held whole in memory
 * and none can hang a webhook.
 */
import { HttpClient, type HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { type FetchedMedia, SendFailure } from "@parley/domain"
import { type Duration, Effect, Stream } from "effect"
import { limitBytes } from "../files/ByteLimit.js"

/** `size`: as the provider stated it, when it did (else the download passed the limit). */
export const tooLarge = (size: number | undefined, maxBytes: number) =>
  new SendFailure({
    kind: "undeliverable",
    message: size === undefined
      ? `The file is over the channel's limit of ${maxBytes} bytes.`
      : `The file is ${size} bytes, over the channel's limit of ${maxBytes}.`,
    status: null,
    code: null,
    excerpt: null
  })

export interface Download {
  readonly maxBytes: number
  /** How long the answer may take to start, and the longest pause between two chunks. */
  readonly timeout: Duration.DurationInput
  /** The provider could not be reached, or the download stalled (the adapter's words, without any secret). */
  readonly unreachable: (cause: unknown) => SendFailure
  /** A non-2xx answer, read by the adapter's rules. */
  readonly refused: (status: number, body: string) => SendFailure
  readonly mimetype: (response: { readonly headers: Readonly<Record<string, string>> }) => string
  readonly name: string | undefined
}

/** The request's answer as a stream that fails past `maxBytes` or when it stalls; open until the scope closes. */
export const download = (client: HttpClient.HttpClient, request: HttpClientRequest.HttpClientRequest, d: Download) =>
  HttpClient.withScope(client).execute(request).pipe(
    Effect.timeout(d.timeout),
    Effect.mapError(d.unreachable),
    Effect.flatMap((response) => bounded(response, d))
  )

/** An answer already in hand (after the adapter's own redirects) as `download` streams it. */
export const bounded = (response: HttpClientResponse.HttpClientResponse, d: Download) =>
  Effect.gen(function*() {
    if (response.status < 200 || response.status >= 300) {
      const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
      return yield* Effect.fail(d.refused(response.status, body))
    }
    const declared = Number(response.headers["content-length"])
    if (Number.isFinite(declared) && declared > d.maxBytes) return yield* tooLarge(declared, d.maxBytes)
    const body = response.stream.pipe(
      Stream.mapError(d.unreachable),
      // a download that stalls is cut, however long the file
      Stream.timeoutFail(() => d.unreachable(new Error("the download stalled")), d.timeout),
      limitBytes(d.maxBytes, () => tooLarge(undefined, d.maxBytes))
    )
    return { mimetype: d.mimetype(response), name: d.name, body } satisfies FetchedMedia
  })
