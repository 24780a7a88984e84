/**
 * What Twilio posts to an SMS channel's webhook (docs/channels.md, "SMS (Twilio)"): the `X-Twilio-Signature` check,
 * and a form-encoded message or status callback turned into normalised events. Pure: no I/O here.
 *
 * A message's provider id is its `MessageSid`, so a retried webhook stores nothing twice; the thread is `From` as
 * Twilio gives it (`+14155550100`, or `whatsapp:+14155550100` for a WhatsApp sender, which is what a reply's `To`
 * must be), and the phone is its digits, so the contact matches the one found on other channels.
 */
import type { ContactMessageEvent, InboundEvent, InboundMedia, ProviderRequest, ReceiptStatus } from "@parley/domain"
import { normalisePhone } from "@parley/domain"
import { createHmac, timingSafeEqual } from "node:crypto"

export interface TwilioSecrets {
  readonly account_sid: string
  readonly auth_token: string
}

/** The form's fields by name; a repeated field keeps every value. */
export const formOf = (body: Uint8Array): Map<string, Array<string>> => {
  const fields = new Map<string, Array<string>>()
  for (const [name, value] of new URLSearchParams(Buffer.from(body).toString("utf8"))) {
    fields.set(name, [...(fields.get(name) ?? []), value])
  }
  return fields
}

/**
 * Twilio's signature (https://www.twilio.com/docs/usage/security#validating-requests): base64 HMAC-SHA1, keyed with
 * the auth token, of the full URL followed by each POST parameter's name and value, sorted by name (a repeated
 * name's values sorted too), as twilio-node's `getExpectedTwilioSignature` computes it.
 */
export const signatureOf = (authToken: string, url: string, fields: ReadonlyMap<string, ReadonlyArray<string>>) => {
  let data = url
  for (const name of [...fields.keys()].sort()) {
    for (const value of [...new Set(fields.get(name))].sort()) data += name + value
  }
  return createHmac("sha1", authToken).update(Buffer.from(data, "utf8")).digest("base64")
}

/** The URL with and without its port: Twilio signs either, by its own account (twilio-node checks both). */
const urlVariants = (url: string) => {
  try {
    const parsed = new URL(url)
    const withoutPort = new URL(url)
    withoutPort.port = ""
    const standard = parsed.protocol === "https:" ? "443" : "80"
    const withPort = parsed.port === ""
      ? `${parsed.protocol}//${parsed.host}:${standard}${parsed.pathname}${parsed.search}`
      : parsed.toString()
    return [...new Set([url, withPort, withoutPort.toString()])]
  } catch {
    return [url]
  }
}

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** `X-Twilio-Signature` over the URL the channel's webhook_url publishes and the form, compared in constant time. */
export const verify = (secrets: TwilioSecrets, request: ProviderRequest) => {
  const header = request.headers["x-twilio-signature"]
  if (header === undefined || header === "") return false
  const fields = formOf(request.body)
  return urlVariants(request.url).some((url) => sameText(header, signatureOf(secrets.auth_token, url, fields)))
}

/** Twilio's message statuses as receipts; `queued`, `accepted`, `scheduled` and `sending` say nothing yet. */
const RECEIPTS: Record<string, ReceiptStatus> = {
  sent: "sent",
  delivered: "delivered",
  read: "read",
  undelivered: "failed",
  failed: "failed"
}

/** Twilio's delivery error codes a failed status callback carries most often, in Twilio's words. */
const DELIVERY_ERRORS: Record<string, string> = {
  "30003": "Unreachable destination handset",
  "30004": "Message blocked",
  "30005": "Unknown destination handset",
  "30006": "Landline or unreachable carrier",
  "30007": "Message filtered by the carrier",
  "30008": "Unknown error"
}

/** Text as Postgres stores it: no NUL. */
const clean = (s: string) => s.replaceAll("\u0000", "")

const WHATSAPP = "whatsapp:"

/** The contact's message: text, media by URL (fetched with the account's credentials), a WhatsApp location. */
const messageEvent = (get: (name: string) => string | undefined, sid: string, from: string): InboundEvent => {
  const count = Math.min(Number(get("NumMedia") ?? "0") || 0, 10)
  const media: Array<InboundMedia> = []
  for (let i = 0; i < count; i++) {
    const url = get(`MediaUrl${i}`)
    if (url !== undefined) {
      media.push({ providerId: url, mimetype: get(`MediaContentType${i}`), name: undefined, caption: undefined })
    }
  }
  const latitude = get("Latitude")
  const longitude = get("Longitude")
  const located = latitude !== undefined && longitude !== undefined
  const place = [get("Label"), get("Address")].filter((s) => s !== undefined && s !== "").join(", ")
  const body = get("Body") ?? ""
  const text = located && body === ""
    ? `[location] ${latitude}, ${longitude}${place === "" ? "" : ` (${place})`}`
    : body
  const whatsapp = from.startsWith(WHATSAPP)
  const event: ContactMessageEvent = {
    _tag: "ContactMessage",
    providerMessageId: sid,
    thread: from,
    phone: normalisePhone(whatsapp ? from.slice(WHATSAPP.length) : from),
    profileName: whatsapp ? get("ProfileName") : undefined,
    // Twilio's webhook carries no time of its own: it posts as the message arrives
    sentAt: new Date(),
    type: located ? "location" : media.length > 0 ? "mms" : whatsapp ? "whatsapp" : "sms",
    text: clean(text),
    media,
    attachments: located
      ? [{
        type: "location",
        latitude: Number(latitude),
        longitude: Number(longitude),
        ...(place ? { name: place } : {})
      }]
      : [],
    quotedId: undefined
  }
  return event
}

/**
 * The events of one verified post: a contact's message, or a status callback on a message we sent (it has
 * `MessageStatus` and no `Body`). A post for another account, or without a sid, is `Unusable`.
 */
export const parse = (secrets: TwilioSecrets, body: Uint8Array): ReadonlyArray<InboundEvent> => {
  const fields = formOf(body)
  const get = (name: string) => fields.get(name)?.[0]
  const sid = get("MessageSid") ?? get("SmsMessageSid") ?? get("SmsSid")
  const account = get("AccountSid")
  if (sid === undefined) return [{ _tag: "Unusable", reason: "A post without MessageSid.", detail: [...fields.keys()] }]
  if (account !== undefined && account !== secrets.account_sid) {
    return [{ _tag: "Unusable", reason: `A post for another account (${account}).`, detail: { sid } }]
  }
  const status = get("MessageStatus")
  if (status !== undefined && status !== "received" && get("Body") === undefined) {
    const receipt = RECEIPTS[status]
    if (receipt === undefined) return []
    const code = get("ErrorCode")
    const message = get("ErrorMessage") ?? (code === undefined ? undefined : DELIVERY_ERRORS[code])
    return [{
      _tag: "Receipt",
      providerMessageId: sid,
      status: receipt,
      at: new Date(),
      error: receipt === "failed"
        ? `Twilio: ${status}${
          code === undefined ? "" : ` (error ${code}${message === undefined ? "" : `: ${message}`})`
        }`
        : undefined
    }]
  }
  const from = get("From")
  if (from === undefined || from === "") {
    return [{ _tag: "Unusable", reason: "A message without From.", detail: { sid } }]
  }
  return [messageEvent(get, sid, from)]
}
