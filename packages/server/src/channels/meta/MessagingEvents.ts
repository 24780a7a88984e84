/**
 * What Meta posts to a Messenger or Instagram channel's webhook (docs/channels.md, "Messenger and Instagram"):
 * `{object: "page" | "instagram", entry: [{id, time, messaging: [...]}]}`, every event of a batch turned into
 * normalised events. Pure: no I/O here. An entry of another page or account of the same app is for that channel.
 */
import type { AccountEvent, ContactMessageEvent, InboundEvent, InboundMedia } from "@parley/domain"
import { arr, clean, type Json, obj, str } from "../JsonParts.js"

/** What a channel of either kind is to the parser: which object Meta posts, and the page's or account's id. */
export interface MessagingAccount {
  readonly object: "page" | "instagram"
  readonly account: string
}

/** Parley's own sends carry this metadata (Messenger), so their echoes are known for ours even before the answer. */
export const OWN_METADATA_PREFIX = "parley:"

const MEDIA_TYPES = new Set(["image", "video", "audio", "file"])

const millis = (v: unknown) => {
  const n = Number(str(v))
  return Number.isFinite(n) && n > 0 ? new Date(n) : undefined
}

/** A link-only attachment (a shared post, a story mention, a reel, a template): said in the text, kept as a part. */
const linkText = (type: string, payload: Json) => {
  const url = str(payload.url)
  const title = str(payload.title)
  const label = type.replaceAll("_", " ")
  return `[${label}]${title === undefined ? "" : ` ${title}`}${url === undefined ? "" : ` ${url}`}`
}

/** The text the agent reads, the files to fetch and the parts kept, of a message's text and attachments. */
const contentOf = (message: Json) => {
  const media: Array<InboundMedia> = []
  const attachments: Array<Record<string, unknown>> = []
  const lines: Array<string> = []
  const text = str(message.text)
  if (text !== undefined && text !== "") lines.push(text)
  for (const part of arr(message.attachments).map(obj)) {
    const type = str(part.type) ?? "unknown"
    const payload = obj(part.payload)
    const url = str(payload.url)
    if (MEDIA_TYPES.has(type) && url !== undefined && payload.sticker_id === undefined) {
      media.push({
        providerId: url,
        mimetype: undefined,
        name: str(payload.name) ?? str(part.name),
        caption: undefined
      })
    } else if (type === "location") {
      const at = obj(payload.coordinates)
      lines.push(`[location] ${str(at.lat) ?? "?"}, ${str(at.long) ?? "?"}`)
      attachments.push({ type: "location", latitude: at.lat, longitude: at.long })
    } else if (payload.sticker_id !== undefined) {
      lines.push("[sticker]")
      attachments.push({ type: "sticker", sticker_id: str(payload.sticker_id), url })
    } else {
      lines.push(linkText(type, payload))
      attachments.push({ type, ...payload })
    }
  }
  const quick = obj(message.quick_reply)
  const quickPayload = str(quick.payload)
  if (quickPayload !== undefined) attachments.push({ type: "quick_reply", payload: quickPayload })
  return { text: clean(lines.join("\n")), media, attachments }
}

const contactMessage = (
  e: Json,
  fields: Pick<ContactMessageEvent, "providerMessageId" | "type" | "text" | "media" | "attachments" | "quotedId">
): ContactMessageEvent => ({
  _tag: "ContactMessage",
  thread: str(obj(e.sender).id) ?? "",
  phone: undefined,
  profileName: undefined,
  sentAt: millis(e.timestamp) ?? new Date(),
  ...fields
})

/** One `messaging` event: what it means for the account, or what we cannot use. */
const eventOf = (e: Json): ReadonlyArray<AccountEvent> => {
  const sender = str(obj(e.sender).id)
  const recipient = str(obj(e.recipient).id)
  const message = obj(e.message)
  if (e.message !== undefined && message.is_echo === true) {
    const mid = str(message.mid)
    // Parley's own send, or one without an id or a thread: nothing to keep
    if (mid === undefined || recipient === undefined) return []
    if ((str(message.metadata) ?? "").startsWith(OWN_METADATA_PREFIX)) return []
    const content = contentOf(message)
    return [{
      _tag: "Echo",
      providerMessageId: mid,
      thread: recipient,
      sentAt: millis(e.timestamp) ?? new Date(),
      text: content.text,
      attachments: [
        ...content.attachments,
        ...content.media.map((m) => ({ type: "file", url: m.providerId })),
        { type: "echo", app_id: str(message.app_id) ?? null }
      ]
    }]
  }
  if (sender === undefined) return [{ _tag: "Unusable", reason: "An event without a sender.", detail: e }]
  if (e.message !== undefined) {
    const mid = str(message.mid)
    if (mid === undefined) return [{ _tag: "Unusable", reason: "A message without an id.", detail: e }]
    if (message.is_deleted === true) {
      return [{ _tag: "Unusable", reason: "The contact deleted a message (Instagram).", detail: { mid } }]
    }
    if (message.is_unsupported === true) {
      return [{ _tag: "Unusable", reason: "A message type Meta does not pass on (is_unsupported).", detail: { mid } }]
    }
    const content = contentOf(message)
    const replyTo = str(obj(message.reply_to).mid)
    return [contactMessage(e, { providerMessageId: mid, type: "message", ...content, quotedId: replyTo })]
  }
  if (e.postback !== undefined) {
    const postback = obj(e.postback)
    const title = str(postback.title) ?? str(postback.payload) ?? ""
    return [contactMessage(e, {
      providerMessageId: str(postback.mid) ?? `${sender}:postback:${str(e.timestamp) ?? ""}`,
      type: "postback",
      text: clean(title),
      media: [],
      attachments: [{ type: "postback", title, payload: str(postback.payload) }],
      quotedId: undefined
    })]
  }
  if (e.reaction !== undefined) {
    const reaction = obj(e.reaction)
    const emoji = str(reaction.emoji) ?? str(reaction.reaction)
    const removed = str(reaction.action) === "unreact"
    return [contactMessage(e, {
      providerMessageId: `${sender}:reaction:${str(reaction.mid) ?? ""}:${str(e.timestamp) ?? ""}`,
      type: "reaction",
      text: removed ? "[reaction removed]" : `[reaction] ${emoji ?? ""}`.trim(),
      media: [],
      attachments: [{ type: "reaction", emoji: removed ? null : emoji ?? null, message_id: str(reaction.mid) }],
      quotedId: str(reaction.mid)
    })]
  }
  if (e.message_edit !== undefined) {
    const edit = obj(e.message_edit)
    const mid = str(edit.mid) ?? ""
    return [contactMessage(e, {
      providerMessageId: `${mid}:edited:${str(edit.num_edit) ?? str(e.timestamp) ?? ""}`,
      type: "edit",
      text: clean(`[edited] ${str(edit.text) ?? ""}`),
      media: [],
      attachments: [{ type: "edit", message_id: mid }],
      quotedId: mid === "" ? undefined : mid
    })]
  }
  if (e.delivery !== undefined || e.read !== undefined) {
    const receipt = obj(e.delivery ?? e.read)
    const status = e.delivery !== undefined ? "delivered" as const : "read" as const
    const at = millis(e.timestamp) ?? new Date()
    const byId: Array<AccountEvent> = [...arr(receipt.mids), receipt.mid].flatMap((mid) => {
      const id = str(mid)
      return id === undefined ? [] : [{ _tag: "Receipt", providerMessageId: id, status, at, error: undefined }]
    })
    const watermark = millis(receipt.watermark)
    return watermark === undefined
      ? byId.length > 0 ? byId : [{ _tag: "Unusable", reason: `A ${status} receipt naming no message.`, detail: e }]
      : [...byId, { _tag: "WatermarkReceipt", thread: sender, status, upTo: watermark }]
  }
  const kind = Object.keys(e).find((k) => !["sender", "recipient", "timestamp"].includes(k)) ?? "unknown"
  return [{ _tag: "Unusable", reason: `A ${kind} event, which Parley does not use.`, detail: e }]
}

/** Every event of a verified body; a body we cannot use is an `Unusable` event. */
export const parse = (channel: MessagingAccount, body: Uint8Array): ReadonlyArray<InboundEvent> => {
  let payload: Json
  try {
    payload = obj(JSON.parse(new TextDecoder().decode(body)))
  } catch {
    return [{ _tag: "Unusable", reason: "The body is not JSON.", detail: null }]
  }
  if (payload.object !== channel.object) {
    return [{
      _tag: "Unusable",
      reason: `An event for object ${str(payload.object) ?? "(none)"}, not ${channel.object}.`,
      detail: payload
    }]
  }
  const out: Array<InboundEvent> = []
  for (const entry of arr(payload.entry).map(obj)) {
    const events: Array<AccountEvent> = arr(entry.messaging).map(obj).flatMap(eventOf)
    // a thread another app controls (the handover protocol's standby channel): its messages are not ours to answer
    for (const standby of arr(entry.standby)) {
      events.push({ _tag: "Unusable", reason: "A standby event: another app controls this thread.", detail: standby })
    }
    if (events.length === 0 && arr(entry.changes).length > 0) {
      events.push({ _tag: "Unusable", reason: "A changes entry, which Parley does not use.", detail: entry })
    }
    const account = str(entry.id)
    if (account === undefined || account === channel.account) out.push(...events)
    else out.push({ _tag: "ForAccount", account, events })
  }
  return out.length > 0 ? out : [{ _tag: "Unusable", reason: "A body without events.", detail: payload }]
}
