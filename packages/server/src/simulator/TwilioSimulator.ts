/**
 * The Twilio simulator Parley ships (docs/channels.md, "SMS (Twilio)"): for an SMS channel created with
 * `credentials: {"simulator": true}`, this process answers as Twilio's REST API does (`/simulator/twilio-api/
 * 2010-04-01/Accounts/{sid}/Messages.json`: Basic auth, the form fields, Twilio's bodies and error codes) and plays
 * the contact's phone (`/simulator/sms/{webhook key}`): a text typed there is posted to the channel's webhook signed
 * with the channel's auth token, as Twilio posts an incoming message, and each reply gets `sent` and `delivered`
 * status callbacks. Its threads are kept in memory by the process that serves the API and sends (the `all` role).
 */
import { normalisePhone } from "@parley/domain"
import { Duration, Effect, FiberSet, Option } from "effect"
import { randomBytes } from "node:crypto"
import { ProviderCredentials } from "../channels/ProviderCredentials.js"
import { ChannelProviders } from "../channels/Providers.js"
import type { TwilioCredentials } from "../channels/twilio/Twilio.js"
import { MAX_BODY_CHARS } from "../channels/twilio/TwilioApi.js"
import { signatureOf } from "../channels/twilio/TwilioWebhook.js"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"
import type { PhoneOptions } from "./PhonePage.js"
import { makeSimulatedChannels, type Simulated } from "./SimulatedChannels.js"
import { SimulatedThreads, type ThreadMessage } from "./SimulatedThreads.js"

/** The contact's phone as the SMS simulator shows it (simulator/PhonePage.ts). */
export const smsPhone: PhoneOptions = {
  app: "SMS",
  colour: "#f22f46",
  field: "phone",
  idLabel: "Your phone number (digits, country code)",
  newId: `"1555" + String(Math.floor(Math.random() * 1e7)).padStart(7, "0")`,
  intro: "Text the number: your message goes to Parley as Twilio posts it, signed with the account's auth token."
}

type SimulatedNumber = Simulated<TwilioCredentials>

/** Twilio's error body. */
const twilioError = (status: number, code: number, message: string) => ({
  status,
  body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }
})

const sid = (prefix: string) => `${prefix}${randomBytes(16).toString("hex")}`

const rfc2822 = (d: Date) => d.toUTCString().replace("GMT", "+0000")

export class TwilioSimulator extends Effect.Service<TwilioSimulator>()("@parley/server/TwilioSimulator", {
  dependencies: [AppConfig.Default, BoundAddresses.Default, ChannelProviders.Default, ProviderCredentials.Default],
  scoped: Effect.gen(function*() {
    const lookup = yield* makeSimulatedChannels
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const callbacks = yield* FiberSet.make()
    const threads = new SimulatedThreads()

    /** The simulated number with this webhook key, or this account SID. */
    const simulated = (where: "key" | "sid", value: string) =>
      lookup<TwilioCredentials>(["sms"], where === "key" ? { key: value } : { matches: (c) => c.account_sid === value })

    /** A form posted to `url` with the `X-Twilio-Signature` Twilio would give it. */
    const post = (number: SimulatedNumber, url: string, params: Record<string, string>) =>
      Effect.promise((signal) => {
        const fields = new Map(Object.entries(params).map(([k, v]) => [k, [v]]))
        return fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            "x-twilio-signature": signatureOf(number.credentials.auth_token, url, fields)
          },
          body: new URLSearchParams(params).toString(),
          signal
        }).then((r) => r.status)
      })

    /** The contact texts the number: posted to the channel's webhook as Twilio posts an incoming SMS. */
    const contactSays = Effect.fn("TwilioSimulator.contactSays")(
      function*(key: string, input: { readonly phone: string; readonly text: string }) {
        const number = yield* simulated("key", key)
        if (Option.isNone(number)) return Option.none()
        const messageSid = sid("SM")
        threads.append(key, input.phone, {
          id: messageSid,
          direction: "in",
          text: input.text,
          at: new Date().toISOString(),
          status: "read"
        })
        const c = number.value.credentials
        const receiver = receiverBaseUrl(config, yield* bound.receiver)
        const status = yield* post(number.value, `${receiver}/channels/${key}/webhook`, {
          ToCountry: "US",
          SmsMessageSid: messageSid,
          NumMedia: "0",
          SmsSid: messageSid,
          SmsStatus: "received",
          Body: input.text,
          To: c.from_number,
          NumSegments: "1",
          MessageSid: messageSid,
          AccountSid: c.account_sid,
          From: `+${input.phone}`,
          ApiVersion: "2010-04-01"
        })
        return Option.some({ message_sid: messageSid, webhook_status: status })
      }
    )

    /** `sent` at once and `delivered` a moment later, posted to the send's `StatusCallback`. */
    const statusCallbacks = (number: SimulatedNumber, url: string, message: ThreadMessage, to: string) =>
      FiberSet.run(
        callbacks,
        Effect.forEach(
          [["sent", 0], ["delivered", 700]] as const,
          ([status, after]) =>
            Effect.sleep(Duration.millis(after)).pipe(
              Effect.zipRight(Effect.sync(() => void (message.status = status))),
              Effect.zipRight(post(number, url, {
                SmsSid: message.id,
                SmsStatus: status,
                MessageStatus: status,
                To: to,
                MessageSid: message.id,
                AccountSid: number.credentials.account_sid,
                From: number.credentials.from_number,
                ApiVersion: "2010-04-01"
              }))
            ),
          { discard: true }
        ).pipe(Effect.catchAllCause((cause) => Effect.logWarning("The simulator's status callbacks failed", cause)))
      )

    /** `POST /simulator/twilio-api/2010-04-01/Accounts/{sid}/Messages.json`, as Twilio answers it. */
    const createMessage = Effect.fn("TwilioSimulator.createMessage")(
      function*(accountSid: string, authorization: string | undefined, form: URLSearchParams) {
        const number = yield* simulated("sid", accountSid)
        const expected = Option.map(
          number,
          (n) => `Basic ${Buffer.from(`${n.credentials.account_sid}:${n.credentials.auth_token}`).toString("base64")}`
        )
        if (Option.isNone(number) || Option.getOrUndefined(expected) !== authorization) {
          return twilioError(401, 20003, "Authenticate")
        }
        const c = number.value.credentials
        const to = form.get("To") ?? ""
        const phone = normalisePhone(to)
        if (phone === undefined || !to.startsWith("+")) {
          return twilioError(400, 21211, `Invalid 'To' Phone Number: ${to}`)
        }
        if (form.get("From") !== c.from_number) {
          return twilioError(
            400,
            21606,
            "The 'From' phone number provided is not a valid message-capable Twilio phone number for this destination."
          )
        }
        const body = form.get("Body") ?? ""
        const media = form.getAll("MediaUrl")
        if (body === "" && media.length === 0) return twilioError(400, 21602, "Message body is required.")
        if (body.length > MAX_BODY_CHARS) {
          return twilioError(400, 21617, "The concatenated message body exceeds the 1600 character limit.")
        }
        const now = new Date()
        const message: ThreadMessage = {
          id: sid("SM"),
          direction: "out",
          text: [body, ...media.map((url) => `[media] ${url}`)].filter((t) => t !== "").join("\n"),
          at: now.toISOString(),
          status: "sent"
        }
        threads.append(number.value.key, phone, message)
        const callback = form.get("StatusCallback")
        if (callback !== null) yield* statusCallbacks(number.value, callback, message, to)
        return {
          status: 201,
          body: {
            account_sid: c.account_sid,
            api_version: "2010-04-01",
            body,
            date_created: rfc2822(now),
            date_sent: null,
            date_updated: rfc2822(now),
            direction: "outbound-api",
            error_code: null,
            error_message: null,
            from: c.from_number,
            messaging_service_sid: null,
            num_media: String(media.length),
            num_segments: String(Math.max(1, Math.ceil(body.length / 153))),
            price: null,
            price_unit: "USD",
            sid: message.id,
            status: "queued",
            subresource_uris: { media: `/2010-04-01/Accounts/${c.account_sid}/Messages/${message.id}/Media.json` },
            to,
            uri: `/2010-04-01/Accounts/${c.account_sid}/Messages/${message.id}.json`
          }
        }
      }
    )

    /** `GET /simulator/twilio-api/2010-04-01/Accounts/{sid}.json`: the account's record (without its token). */
    const fetchAccount = Effect.fn("TwilioSimulator.fetchAccount")(
      function*(accountSid: string, authorization: string | undefined) {
        const number = yield* simulated("sid", accountSid)
        const c = Option.getOrUndefined(number)?.credentials
        if (
          c === undefined ||
          authorization !== `Basic ${Buffer.from(`${c.account_sid}:${c.auth_token}`).toString("base64")}`
        ) {
          return twilioError(401, 20003, "Authenticate")
        }
        return {
          status: 200,
          body: {
            sid: c.account_sid,
            friendly_name: "Parley simulator",
            status: "active",
            type: "Full",
            uri: `/2010-04-01/Accounts/${c.account_sid}.json`
          }
        }
      }
    )

    return {
      contactSays,
      createMessage,
      fetchAccount,
      simulated,
      thread: (key: string, phone: string) => threads.get(key, phone)
    }
  })
}) {}
