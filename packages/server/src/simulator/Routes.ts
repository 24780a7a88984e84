/**
 * The simulators' routes on the api listener (WhatsAppSimulator.ts, TelegramSimulator.ts): the provider's API as a
 * simulated channel's adapter calls it, and the contact's phone: a page, its thread, and the contact's messages.
 */
import { HttpLayerRouter, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option, Schema } from "effect"
import { SIMULATOR_BOT_API_PATH } from "../channels/telegram/Telegram.js"
import { SIMULATOR_TWILIO_API_PATH } from "../channels/twilio/Twilio.js"
import { SIMULATOR_GRAPH_PATH } from "../channels/whatsapp/WhatsApp.js"
import { EmailSimulatorRoutes } from "./EmailSimulator.js"
import { MetaSimulatorRoutes } from "./MetaSimulatorRoutes.js"
import { telegramPhone, whatsappPhone } from "./PhonePage.js"
import { bearer, json, notFound, page } from "./SimulatorHttp.js"
import { TelegramSimulator } from "./TelegramSimulator.js"
import { smsPhone, TwilioSimulator } from "./TwilioSimulator.js"
import { WhatsAppSimulator } from "./WhatsAppSimulator.js"

const graphSend = Effect.gen(function*() {
  const { phone } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = yield* Effect.orElseSucceed(request.json, () => undefined)
  const answer = yield* (yield* WhatsAppSimulator).graphSend(phone ?? "", yield* bearer, body)
  return json(answer.status, answer.body)
})

const graphPhone = (templates: boolean) =>
  Effect.gen(function*() {
    const { phone } = yield* HttpLayerRouter.params
    const answer = yield* (yield* WhatsAppSimulator).graphPhone(phone ?? "", yield* bearer, templates)
    return json(answer.status, answer.body)
  })

const Say = Schema.Struct({
  wa_id: Schema.String.pipe(
    Schema.pattern(/^[1-9]\d{6,14}$/, { message: () => "must be a phone: digits, country code" })
  ),
  name: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(100)), { default: () => "Simulated contact" }),
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(4096))
})

const say = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  const input = yield* Effect.either(Effect.flatMap(request.json, Schema.decodeUnknown(Say)))
  if (input._tag === "Left") {
    return json(422, { message: "Expected {wa_id, name?, text}: a phone of digits and 1 to 4096 characters." })
  }
  const sent = yield* (yield* WhatsAppSimulator).contactSays(key ?? "", input.right)
  return Option.match(sent, { onNone: () => notFound, onSome: (s) => json(200, s) })
})

const thread = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const search = yield* HttpServerRequest.ParsedSearchParams
  const simulator = yield* WhatsAppSimulator
  if (Option.isNone(yield* simulator.simulated("key", key ?? ""))) return notFound
  const waId = typeof search.wa_id === "string" ? search.wa_id : ""
  return json(200, { wa_id: waId, messages: simulator.thread(key ?? "", waId) })
})

/** `POST /simulator/telegram-api/bot{token}/{method}`: JSON, or a form when the adapter uploads a file. */
const botApi = Effect.gen(function*() {
  const { bot, method } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = yield* request.json.pipe(
    Effect.orElse(() =>
      Effect.map(
        request.multipart,
        (parts) =>
          Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, typeof v === "string" ? v : "(uploaded)"]))
      )
    ),
    Effect.scoped,
    Effect.orElseSucceed(() => undefined)
  )
  const answer = yield* (yield* TelegramSimulator).botApi((bot ?? "").replace(/^bot/, ""), method ?? "", body)
  return json(answer.status, answer.body)
})

const TelegramSay = Schema.Struct({
  chat_id: Schema.Int.pipe(Schema.between(1, 9_999_999_999, { message: () => "must be a Telegram user id" })),
  name: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(100)), { default: () => "Simulated contact" }),
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(4096))
})

const telegramSay = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  const input = yield* Effect.either(Effect.flatMap(request.json, Schema.decodeUnknown(TelegramSay)))
  if (input._tag === "Left") {
    return json(422, { message: "Expected {chat_id, name?, text}: a user id and 1 to 4096 characters." })
  }
  const sent = yield* (yield* TelegramSimulator).contactSays(key ?? "", input.right)
  return Option.match(sent, { onNone: () => notFound, onSome: (s) => json(200, s) })
})

const telegramThread = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const search = yield* HttpServerRequest.ParsedSearchParams
  const simulator = yield* TelegramSimulator
  if (Option.isNone(yield* simulator.simulated("key", key ?? ""))) return notFound
  const chat = typeof search.chat_id === "string" ? search.chat_id : ""
  return json(200, { chat_id: chat, messages: simulator.thread(key ?? "", chat) })
})

/** `POST .../Accounts/{sid}/Messages.json`: the form Twilio's REST API takes, with Basic auth. */
const twilioMessages = Effect.gen(function*() {
  const { sid } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  const form = new URLSearchParams(yield* Effect.orElseSucceed(request.text, () => ""))
  const answer = yield* (yield* TwilioSimulator).createMessage(sid ?? "", request.headers["authorization"], form)
  return json(answer.status, answer.body)
})

/** `GET .../Accounts/{sid}.json`: the account's record. */
const twilioAccount = Effect.gen(function*() {
  const { account } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  if (account === undefined || !account.endsWith(".json")) return notFound
  const answer = yield* (yield* TwilioSimulator).fetchAccount(account.slice(0, -5), request.headers["authorization"])
  return json(answer.status, answer.body)
})

/** The page sends the phone as a number (its field is not `wa_id`): either is taken, as digits. */
const SmsSay = Schema.Struct({
  phone: Schema.Union(Schema.Number, Schema.String).pipe(
    Schema.transform(Schema.String, { strict: true, decode: (p) => String(p).replace(/^\+/, ""), encode: (s) => s }),
    Schema.pattern(/^[1-9]\d{6,14}$/, { message: () => "must be a phone: digits, country code" })
  ),
  name: Schema.optional(Schema.String.pipe(Schema.maxLength(100))),
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1600))
})

const smsSay = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const request = yield* HttpServerRequest.HttpServerRequest
  const input = yield* Effect.either(Effect.flatMap(request.json, Schema.decodeUnknown(SmsSay)))
  if (input._tag === "Left") {
    return json(422, {
      message: "Expected {phone, text}: a phone of digits with country code and 1 to 1600 characters."
    })
  }
  const sent = yield* (yield* TwilioSimulator).contactSays(key ?? "", input.right)
  return Option.match(sent, { onNone: () => notFound, onSome: (s) => json(200, s) })
})

const smsThread = Effect.gen(function*() {
  const { key } = yield* HttpLayerRouter.params
  const search = yield* HttpServerRequest.ParsedSearchParams
  const simulator = yield* TwilioSimulator
  if (Option.isNone(yield* simulator.simulated("key", key ?? ""))) return notFound
  const phone = typeof search.phone === "string" ? search.phone.replace(/^\+/, "") : ""
  return json(200, { phone, messages: simulator.thread(key ?? "", phone) })
})

export const SimulatorRoutes = Layer.mergeAll(
  HttpLayerRouter.add("POST", `${SIMULATOR_GRAPH_PATH}/:version/:phone/messages`, graphSend),
  HttpLayerRouter.add("GET", `${SIMULATOR_GRAPH_PATH}/:version/:phone`, graphPhone(false)),
  HttpLayerRouter.add("GET", `${SIMULATOR_GRAPH_PATH}/:version/:phone/message_templates`, graphPhone(true)),
  HttpLayerRouter.add(
    "GET",
    "/simulator/whatsapp/:key",
    page((key) => Effect.flatMap(WhatsAppSimulator, (s) => s.simulated("key", key)), whatsappPhone)
  ),
  HttpLayerRouter.add("GET", "/simulator/whatsapp/:key/thread", thread),
  HttpLayerRouter.add("POST", "/simulator/whatsapp/:key/messages", say),
  HttpLayerRouter.add("POST", `${SIMULATOR_BOT_API_PATH}/:bot/:method`, botApi),
  HttpLayerRouter.add(
    "GET",
    "/simulator/telegram/:key",
    page((key) => Effect.flatMap(TelegramSimulator, (s) => s.simulated("key", key)), telegramPhone)
  ),
  HttpLayerRouter.add("GET", "/simulator/telegram/:key/thread", telegramThread),
  HttpLayerRouter.add("POST", "/simulator/telegram/:key/messages", telegramSay),
  HttpLayerRouter.add("POST", `${SIMULATOR_TWILIO_API_PATH}/2010-04-01/Accounts/:sid/Messages.json`, twilioMessages),
  HttpLayerRouter.add("GET", `${SIMULATOR_TWILIO_API_PATH}/2010-04-01/Accounts/:account`, twilioAccount),
  HttpLayerRouter.add(
    "GET",
    "/simulator/sms/:key",
    page((key) => Effect.flatMap(TwilioSimulator, (s) => s.simulated("key", key)), smsPhone)
  ),
  HttpLayerRouter.add("GET", "/simulator/sms/:key/thread", smsThread),
  HttpLayerRouter.add("POST", "/simulator/sms/:key/messages", smsSay),
  EmailSimulatorRoutes,
  MetaSimulatorRoutes
)
