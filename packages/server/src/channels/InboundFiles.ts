/**
 * A contact's files as a provider's event names them, into storage while the message is stored (ProviderInbound.ts):
 * fetched from the provider (or taken from the message itself, a mail's attachment), streamed within the channel's
 * limit; one that fails is said in the message's text, never lost in silence.
 */
import { classifyFile, type ContactMessageEvent, type FileEntry, ulid } from "@parley/domain"
import { Effect, Stream } from "effect"
import { FileStorage } from "../files/FileStorage.js"
import type { ProviderChannelRow } from "./ChannelsRepo.js"
import type { ProviderEntry } from "./Providers.js"

const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

const extension = (mimetype: string) => {
  const sub = mimetype.split("/")[1]?.split(";")[0] ?? "bin"
  return sub.replace(/[^a-z0-9]+/gi, "").slice(0, 10) || "bin"
}

export const makeInboundFiles = Effect.gen(function*() {
  const storage = yield* FileStorage

  /** Each file of the message fetched into storage; one that fails is said in the text, not lost. */
  const fetch = (
    channel: ProviderChannelRow,
    entry: ProviderEntry,
    credentials: unknown,
    event: ContactMessageEvent
  ) =>
    Effect.forEach(
      event.media,
      (media) =>
        (media.content === undefined
          ? entry.provider.fetchMedia(credentials, media, entry.provider.rules.maxFileBytes)
          : Effect.succeed({
            mimetype: media.mimetype ?? "application/octet-stream",
            name: media.name,
            body: Stream.make(media.content)
          })).pipe(
            Effect.flatMap((fetched) => {
              const month = new Date().toISOString().slice(0, 7).replace("-", "/")
              const name = media.name ?? `${event.type}.${extension(fetched.mimetype)}`
              const key = `channels/${channel.id}/${month}/${ulid()}/${safeName(name)}`
              return Effect.map(storage.putStream(key, fetched.body), (size) => ({
                key,
                entry: {
                  path: key,
                  mimetype: fetched.mimetype,
                  type: classifyFile(fetched.mimetype),
                  size,
                  name
                } satisfies FileEntry
              }))
            }),
            Effect.scoped,
            Effect.map((stored) => ({ stored, error: null })),
            Effect.catchTag(
              "SendFailure",
              (failure) =>
                Effect.succeed({ stored: null, error: `[${event.type} could not be downloaded: ${failure.message}]` })
            )
          )
    )

  return { fetch }
})
