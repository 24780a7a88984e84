/**
 * What Meta posts to a WhatsApp channel's webhook (docs/channels.md, "WhatsApp"): the verify handshake, the
 * `X-Hub-Signature-256` check over the raw body, and every entry and change of a batch turned into normalised
 * events. Pure: no I/O here.
 */
import type { AccountEvent, ContactMessageEvent, InboundEvent, InboundMedia, ReceiptStatus } from "@parley/domain"
import { normalisePhone } from "@parley/domain"
export { handshake, verify } from "../meta/MetaSignature.js"
import { arr, clean, type Json, obj, str } from "../JsonParts.js"

export interface WhatsAppSecrets {
  readonly phone_number_id: string
  readonly app_secret: string
  readonly verify_token: string
}

const seconds = (v: unknown) => {
  const n = Number(str(v))
  return Number.isFinite(n) && n > 0 ? new Date(n * 1000) : undefined
}

const MEDIA_TYPES = ["image", "audio", "video", "document", "sticker"] as const

/** The text the agent reads and the parts kept as attachments, for each message type Meta documents. */
const contentOf = (m: Json): Pick<ContactMessageEvent, "text" | "media" | "attachments"> | undefined => {
  const type = str(m.type) ?? "unknown"
  if (type === "text") return { text: str(obj(m.text).body) ?? "", media: [], attachments: [] }
  if ((MEDIA_TYPES as ReadonlyArray<string>).includes(type)) {
    const part = obj(m[type])
    const id = str(part.id)
    if (id === undefined) return undefined
    const caption = str(part.caption)
    const media: InboundMedia = { providerId: id, mimetype: str(part.mime_type), name: str(part.filename), caption }
    return { text: caption ?? "", media: [media], attachments: [] }
  }
  if (type === "location") {
    const l = obj(m.location)
    const place = [str(l.name), str(l.address)].filter((s) => s !== undefined).join(", ")
    const text = `[location] ${str(l.latitude) ?? "?"}, ${str(l.longitude) ?? "?"}${place ? ` (${place})` : ""}`
    return { text, media: [], attachments: [{ type: "location", ...l }] }
  }
  if (type === "contacts") {
    const cards = arr(m.contacts).map(obj)
    const lines = cards.map((c) => {
      const name = str(obj(c.name).formatted_name) ?? "?"
      const phones = arr(c.phones).map((p) => str(obj(p).phone)).filter((p) => p !== undefined)
      return `${name}${phones.length > 0 ? ` ${phones.join(", ")}` : ""}`
    })
    return {
      text: `[contact] ${lines.join("; ")}`,
      media: [],
      attachments: cards.map((c) => ({ type: "contact", ...c }))
    }
  }
  if (type === "interactive") {
    const i = obj(m.interactive)
    const reply = obj(i.button_reply ?? i.list_reply)
    const title = str(reply.title) ?? ""
    return {
      text: title,
      media: [],
      attachments: [{
        type: str(i.type) ?? "interactive",
        id: str(reply.id),
        title,
        description: str(reply.description)
      }]
    }
  }
  if (type === "button") {
    const b = obj(m.button)
    return { text: str(b.text) ?? "", media: [], attachments: [{ type: "button", payload: str(b.payload) }] }
  }
  if (type === "reaction") {
    const r = obj(m.reaction)
    const emoji = str(r.emoji)
    return {
      text: emoji === undefined || emoji === "" ? "[reaction removed]" : `[reaction] ${emoji}`,
      media: [],
      attachments: [{ type: "reaction", emoji: emoji ?? null, message_id: str(r.message_id) }]
    }
  }
  const errors = arr(m.errors).map(obj).map((e) => str(e.title) ?? str(e.message)).filter((e) => e !== undefined)
  return {
    text: `[unsupported WhatsApp message: ${type}${errors.length > 0 ? `: ${errors.join("; ")}` : ""}]`,
    media: [],
    attachments: [{ type: "unsupported", whatsapp_type: type }]
  }
}

const STATUS: Record<string, ReceiptStatus> = { sent: "sent", delivered: "delivered", read: "read", failed: "failed" }

/** Every event of a verified body, in the order Meta sent them; what we cannot use is an `Unusable` event. */
export const parse = (secrets: WhatsAppSecrets, body: Uint8Array): ReadonlyArray<InboundEvent> => {
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(body).toString("utf8"))
  } catch {
    return [{ _tag: "Unusable", reason: "The body is not JSON.", detail: null }]
  }
  const root = obj(json)
  if (root.object !== "whatsapp_business_account") {
    return [{ _tag: "Unusable", reason: `Unexpected object ${JSON.stringify(root.object ?? null)}.`, detail: null }]
  }
  const events: Array<InboundEvent> = []
  for (const entry of arr(root.entry).map(obj)) {
    for (const change of arr(entry.changes).map(obj)) {
      const value = obj(change.value)
      if (change.field !== "messages") {
        events.push({ _tag: "Unusable", reason: `Unsupported field ${String(change.field)}.`, detail: change })
        continue
      }
      const profiles = new Map(
        arr(value.contacts).map(obj).map((c) => [str(c.wa_id) ?? "", str(obj(c.profile).name)] as const)
      )
      const changed: Array<AccountEvent> = []
      for (const m of arr(value.messages).map(obj)) changed.push(messageEvent(m, profiles))
      for (const s of arr(value.statuses).map(obj)) changed.push(receiptEvent(s))
      for (const e of arr(value.errors).map(obj)) {
        changed.push({
          _tag: "Unusable",
          reason: `Provider error ${str(e.code) ?? "?"}: ${str(e.title) ?? ""}`,
          detail: e
        })
      }
      // another number of the same Meta app: Meta posts every number of an app to its one callback URL
      const number = str(obj(value.metadata).phone_number_id)
      if (number !== undefined && number !== secrets.phone_number_id) {
        events.push({ _tag: "ForAccount", account: number, events: changed })
      } else events.push(...changed)
    }
  }
  return events
}

const messageEvent = (m: Json, profiles: ReadonlyMap<string, string | undefined>): AccountEvent => {
  const id = str(m.id)
  const from = str(m.from)
  const sentAt = seconds(m.timestamp)
  const content = contentOf(m)
  if (id === undefined || from === undefined || sentAt === undefined || content === undefined) {
    return { _tag: "Unusable", reason: "A message without id, sender, timestamp or media id.", detail: m }
  }
  const quoted = str(obj(m.context).id) ?? (m.type === "reaction" ? str(obj(m.reaction).message_id) : undefined)
  return {
    _tag: "ContactMessage",
    providerMessageId: clean(id),
    thread: clean(from),
    phone: normalisePhone(from) ?? undefined,
    profileName: profiles.get(from) === undefined ? undefined : clean(profiles.get(from)!),
    sentAt,
    type: str(m.type) ?? "unknown",
    text: clean(content.text),
    media: content.media,
    attachments: content.attachments,
    quotedId: quoted
  }
}

const receiptEvent = (s: Json): AccountEvent => {
  const id = str(s.id)
  const status = STATUS[str(s.status) ?? ""]
  const at = seconds(s.timestamp)
  if (id === undefined || status === undefined || at === undefined) {
    return { _tag: "Unusable", reason: `A status we do not know (${String(s.status)}).`, detail: s }
  }
  const errors = arr(s.errors).map(obj)
  const error = errors.length === 0
    ? undefined
    : errors.map((e) => `${str(e.code) ?? "?"}: ${str(e.title) ?? str(e.message) ?? ""}`).join("; ")
  return { _tag: "Receipt", providerMessageId: id, status, at, error }
}
