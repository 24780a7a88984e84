import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { errorBody } from "@parley/domain"
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import { FileStorage } from "./FileStorage.js"

const notFound = HttpServerResponse.unsafeJson(errorBody(404, "Not found."), { status: 404 })

/** `GET /files/<key>?expires=&signature=`: only signed, unexpired URLs; anything else is a plain 404. */
export const FilesRoute = HttpLayerRouter.add(
  "GET",
  "/files/*",
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const storage = yield* FileStorage
    const url = new URL(request.url, "http://localhost")
    const key = decodeURIComponent(url.pathname.slice("/files/".length))
    const file = storage.verify(
      key,
      url.searchParams.get("expires") ?? undefined,
      url.searchParams.get("signature") ?? undefined
    )
    if (Option.isNone(file) || !Fs.existsSync(file.value)) return notFound
    const meta = yield* storage.describe(key)
    return yield* HttpServerResponse.file(file.value, {
      headers: {
        "content-type": Option.match(meta, { onNone: () => "application/octet-stream", onSome: (m) => m.mimetype }),
        "content-disposition": `attachment; filename*=UTF-8''${
          encodeURIComponent(Option.match(meta, { onNone: () => "file", onSome: (m) => m.name }))
        }`,
        "cache-control": "private, max-age=300",
        "x-content-type-options": "nosniff"
      }
    }).pipe(Effect.orElseSucceed(() => notFound))
  })
)
