/**
 * Private file storage: a directory under the data dir, keyed by storage key (`uploads/<client_id>/...`).
 * Nothing is public: a file is read only through a signed URL that expires
 * (`/files/<key>?expires=<unix s>&signature=<hex hmac>`), and keys cannot leave the root.
 */
import { SqlClient } from "@effect/sql"
import { isSafeStorageKey } from "@parley/domain"
import { Effect, Option, Stream } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"

export const SIGNED_URL_TTL_SECONDS = 60 * 60

export class FileStorage extends Effect.Service<FileStorage>()("@parley/server/FileStorage", {
  dependencies: [AppSecret.Default, AppConfig.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const secret = yield* AppSecret
    const sql = yield* SqlClient.SqlClient
    const root = Path.resolve(config.dataDir, "files")

    const resolve = (key: string): Option.Option<string> => {
      if (!isSafeStorageKey(key)) return Option.none()
      const full = Path.resolve(root, key)
      return full.startsWith(root + Path.sep) ? Option.some(full) : Option.none()
    }

    /** Copies a file (a multipart temp file) into storage under `key`. */
    const putFromPath = (key: string, source: string) =>
      Effect.gen(function*() {
        const target = Option.getOrThrowWith(resolve(key), () => new Error(`unsafe storage key ${key}`))
        yield* Effect.promise(async () => {
          await Fs.promises.mkdir(Path.dirname(target), { recursive: true })
          await Fs.promises.copyFile(source, target)
        })
      }).pipe(Effect.withSpan("FileStorage.put"))

    /**
     * Writes a download (a contact's media from a provider) into storage under `key` as it arrives, and answers
     * its size. The file appears under its key only once whole: a stream that fails leaves nothing behind.
     */
    const putStream = <E, R>(key: string, body: Stream.Stream<Uint8Array, E, R>) =>
      Effect.gen(function*() {
        const target = Option.getOrThrowWith(resolve(key), () => new Error(`unsafe storage key ${key}`))
        const partial = `${target}.part`
        yield* Effect.promise(() => Fs.promises.mkdir(Path.dirname(target), { recursive: true }))
        const file = yield* Effect.acquireRelease(
          Effect.promise(() => Fs.promises.open(partial, "w")),
          (handle) => Effect.promise(() => handle.close())
        )
        const size = yield* Stream.runFoldEffect(
          body,
          0,
          (written, chunk) => Effect.as(Effect.promise(() => file.write(chunk)), written + chunk.byteLength)
        )
        yield* Effect.promise(() => file.sync())
        yield* Effect.promise(() => Fs.promises.rename(partial, target))
        return size
      }).pipe(
        Effect.scoped,
        Effect.tapErrorCause(() =>
          Option.match(resolve(key), {
            onNone: () => Effect.void,
            onSome: (target) => Effect.promise(() => Fs.promises.rm(`${target}.part`, { force: true }))
          })
        ),
        Effect.withSpan("FileStorage.putStream")
      )

    const remove = (key: string) =>
      Option.match(resolve(key), {
        onNone: () => Effect.void,
        onSome: (full) => Effect.promise(() => Fs.promises.rm(full, { force: true }))
      })

    const sign = (key: string, expires: number) =>
      createHmac("sha256", secret.filesKey).update(`${key}\n${expires}`).digest("hex")

    /** A URL path with query; the caller puts the public base in front. */
    const signedPath = (key: string, nowSeconds = Math.floor(Date.now() / 1000)) => {
      const expires = nowSeconds + SIGNED_URL_TTL_SECONDS
      return `/files/${key.split("/").map(encodeURIComponent).join("/")}?expires=${expires}&signature=${
        sign(key, expires)
      }`
    }

    /** The file's absolute path when the signature is ours and not expired. */
    const verify = (
      key: string,
      expires: string | undefined,
      signature: string | undefined,
      nowSeconds = Math.floor(Date.now() / 1000)
    ) => {
      const at = Number(expires)
      if (!Number.isInteger(at) || at < nowSeconds || signature === undefined || !/^[0-9a-f]{64}$/.test(signature)) {
        return Option.none<string>()
      }
      const expected = Buffer.from(sign(key, at), "hex")
      if (!timingSafeEqual(expected, Buffer.from(signature, "hex"))) return Option.none<string>()
      return resolve(key)
    }

    /** Name and type recorded when the file was stored. */
    const describe = (key: string) =>
      sql<{ name: string; mimetype: string }>`select name, mimetype from files where key = ${key}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** The stored file as a Blob backed by its file on disk (read as it is sent, never whole in memory). */
    const blob = (key: string, type: string) =>
      Option.match(resolve(key), {
        onNone: () => Effect.succeed(Option.none<Blob>()),
        onSome: (path) =>
          Effect.tryPromise(() => Fs.promises.access(path).then(() => Fs.openAsBlob(path, { type }))).pipe(
            Effect.map(Option.some),
            Effect.orElseSucceed(() => Option.none<Blob>())
          )
      })

    return { putFromPath, putStream, remove, signedPath, verify, describe, blob, root }
  })
}) {}
