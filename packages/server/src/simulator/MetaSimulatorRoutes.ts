/**
 * The Messenger and Instagram simulator's routes (MetaSimulator.ts): the Send API as a simulated channel's adapter
 * calls it, and each kind's contact app: its page, a thread, and the contact's messages.
 */
import { HttpLayerRouter, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option, Schema } from "effect"
import { SIMULATOR_MESSAGING_PATH } from "../channels/meta/MetaMessaging.js"
import { instagramPhone, messengerPhone, type MetaKind, MetaSimulator } from "./MetaSimulator.js"
import { bearer, json, notFound, page } from "./SimulatorHttp.js"

const graph = (method: "GET" | "POST") =>
  Effect.gen(function*() {
    const { id } = yield* HttpLayerRouter.params
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = method === "POST" ? yield* Effect.orElseSucceed(request.json, () => undefined) : undefined
    const answer = yield* (yield* MetaSimulator).graph(method, id ?? "", yield* bearer, body)
    return json(answer.status, answer.body)
  })

const Say = Schema.Struct({
  psid: Schema.Union(Schema.Number, Schema.String).pipe(
    Schema.transform(Schema.String, { strict: true, decode: String, encode: (s) => s }),
    Schema.pattern(/^\d{5,20}$/, { message: () => "must be a page-scoped id: digits" })
  ),
  name: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(100)), { default: () => "Simulated contact" }),
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000))
})

const say = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  const input = yield* Effect.either(Effect.flatMap(request.json, Schema.decodeUnknown(Say)))
  if (input._tag === "Left") {
    return json(422, { message: "Expected {psid, name?, text}: an id of digits and 1 to 2000 characters." })
  }
  const sent = yield* (yield* MetaSimulator).contactSays(key ?? "", input.right)
  return Option.match(sent, { onNone: () => notFound, onSome: (s) => json(200, s) })
})

const thread = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const search = yield* HttpServerRequest.ParsedSearchParams
  const simulator = yield* MetaSimulator
  if (Option.isNone(yield* simulator.simulated("key", key ?? ""))) return notFound
  const psid = typeof search.psid === "string" ? search.psid : ""
  return json(200, { psid, messages: simulator.thread(key ?? "", psid) })
})

const app = (kind: MetaKind) =>
  Layer.mergeAll(
    HttpLayerRouter.add(
      "GET",
      `/simulator/${kind}/:key`,
      page(
        (key) => Effect.flatMap(MetaSimulator, (s) => s.simulated("key", key)),
        kind === "messenger" ? messengerPhone : instagramPhone
      )
    ),
    HttpLayerRouter.add("GET", `/simulator/${kind}/:key/thread`, thread),
    HttpLayerRouter.add("POST", `/simulator/${kind}/:key/messages`, say)
  )

export const MetaSimulatorRoutes = Layer.mergeAll(
  HttpLayerRouter.add("POST", `${SIMULATOR_MESSAGING_PATH}/:version/:id/messages`, graph("POST")),
  HttpLayerRouter.add("GET", `${SIMULATOR_MESSAGING_PATH}/:version/:id`, graph("GET")),
  app("messenger"),
  app("instagram")
)
