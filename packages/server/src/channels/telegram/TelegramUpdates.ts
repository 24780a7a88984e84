/**
 * What Telegram posts to a Telegram channel's webhook (docs/channels.md, "Telegram"): the secret-token check, and an
 * update turned into normalised events. Pure: no I/O here.
 *
 * A message's provider id is `{chat id}:{message id}` (Telegram numbers messages per chat), so a retried update
 * stores nothing twice; an edit is stored as its own message quoting the original, with the edit's date in its id;
 * a button press (callback query) by its query id. Every id begins with the chat id.
 */
import type { ContactMessageEvent, InboundEvent, InboundMedia, ProviderRequest } from "@parley/domain"
import { normalisePhone } from "@parley/domain"
import { equalSecrets } from "../../identity/Secrets.js"
import { arr, clean, type Json, obj, str } from "../JsonParts.js"

export interface TelegramSecrets {
  readonly secret_token: string
}

/** `X-Telegram-Bot-Api-Secret-Token`: the secret Parley gave `setWebhook`, compared in constant time. */
export const verify = (secrets: TelegramSecrets, request: ProviderRequest) => {
  const header = request.headers["x-telegram-bot-api-secret-token"]
  return header !== undefined && equalSecrets(header, secrets.secret_token)
}

/** The media kinds of a Telegram message, with the MIME type Telegram implies when it states none. */
const MEDIA: ReadonlyArray<readonly [string, string]> = [
  ["document", "application/octet-stream"],
  ["voice", "audio/ogg"],
  ["audio", "audio/mpeg"],
  ["video", "video/mp4"],
  ["video_note", "video/mp4"],
  ["animation", "video/mp4"],
  ["sticker", "image/webp"]
]

/** The text the agent reads, its files and the structured parts kept as attachments. */
const contentOf = (m: Json): Pick<ContactMessageEvent, "type" | "text" | "media" | "attachments"> => {
  const caption = str(m.caption)
  if (typeof m.text === "string") return { type: "text", text: m.text, media: [], attachments: [] }
  const photos = arr(m.photo).map(obj)
  if (photos.length > 0) {
    // Telegram sends every size, smallest first: the largest is kept
    const largest = photos[photos.length - 1]!
    const id = str(largest.file_id)
    if (id !== undefined) {
      const media: InboundMedia = { providerId: id, mimetype: "image/jpeg", name: undefined, caption }
      return { type: "photo", text: caption ?? "", media: [media], attachments: [] }
    }
  }
  for (const [type, mimetype] of MEDIA) {
    const part = obj(m[type])
    const id = str(part.file_id)
    if (id === undefined) continue
    const media: InboundMedia = {
      providerId: id,
      mimetype: str(part.mime_type) ?? mimetype,
      name: str(part.file_name),
      caption
    }
    const emoji = type === "sticker" ? str(part.emoji) : undefined
    return { type, text: caption ?? (emoji === undefined ? "" : `[sticker] ${emoji}`), media: [media], attachments: [] }
  }
  if (m.location !== undefined) {
    const l = obj(m.location)
    const venue = obj(m.venue)
    const place = [str(venue.title), str(venue.address)].filter((s) => s !== undefined).join(", ")
    const text = `[location] ${str(l.latitude) ?? "?"}, ${str(l.longitude) ?? "?"}${place ? ` (${place})` : ""}`
    return { type: "location", text, media: [], attachments: [{ type: "location", ...l }] }
  }
  if (m.contact !== undefined) {
    const c = obj(m.contact)
    const name = [str(c.first_name), str(c.last_name)].filter((s) => s !== undefined).join(" ") || "?"
    const phone = str(c.phone_number)
    return {
      type: "contact",
      text: `[contact] ${name}${phone === undefined ? "" : ` ${phone}`}`,
      media: [],
      attachments: [{ type: "contact", ...c }]
    }
  }
  const kind = Object.keys(m).find((k) => !["message_id", "from", "chat", "date", "reply_to_message"].includes(k))
  return {
    type: "unsupported",
    text: `[unsupported Telegram message${kind === undefined ? "" : `: ${kind}`}]`,
    media: [],
    attachments: [{ type: "unsupported", telegram_type: kind ?? null }]
  }
}

const nameOf = (from: Json) => {
  const name = [str(from.first_name), str(from.last_name)].filter((s) => s !== undefined).join(" ")
  return name === "" ? str(from.username) : clean(name)
}

const messageEvent = (m: Json, edited: boolean): InboundEvent => {
  const chat = str(obj(m.chat).id)
  const id = str(m.message_id)
  const date = Number(edited ? m.edit_date ?? m.date : m.date)
  if (chat === undefined || id === undefined || !Number.isFinite(date) || date <= 0) {
    return { _tag: "Unusable", reason: "A message without chat, id or date.", detail: m }
  }
  if (obj(m.chat).type !== "private") {
    return {
      _tag: "Unusable",
      reason: `A message in a ${String(obj(m.chat).type)} chat: only private chats are answered.`,
      detail: { chat }
    }
  }
  const content = contentOf(m)
  const from = obj(m.from)
  // a contact who shares their own card gives their phone: it matches the contact found on other channels
  const shared = obj(m.contact)
  const phone = str(shared.user_id) !== undefined && str(shared.user_id) === str(from.id)
    ? normalisePhone(str(shared.phone_number) ?? "") ?? undefined
    : undefined
  const quoted = str(obj(m.reply_to_message).message_id)
  // a deep link `t.me/{bot}?start={payload}` opens the chat with `/start {payload}`: the payload is Parley's token
  const start = edited ? null : /^\/start(?:@\w+)? ([A-Za-z0-9_-]{1,64})$/.exec(content.text)
  return {
    _tag: "ContactMessage",
    ...(start === null ? {} : { linkToken: start[1] }),
    providerMessageId: edited ? `${chat}:${id}:edited:${date}` : `${chat}:${id}`,
    thread: chat,
    phone,
    sharesPhone: phone !== undefined,
    profileName: nameOf(from),
    sentAt: new Date(date * 1000),
    type: edited ? `edited_${content.type}` : content.type,
    text: clean(edited ? `[edited] ${content.text}` : start === null ? content.text : "/start"),
    // an edit changes the text or caption: its files are the original's, stored already
    media: edited ? [] : content.media,
    attachments: edited ? [...content.attachments, { type: "edit", message_id: `${chat}:${id}` }] : content.attachments,
    quotedId: edited ? `${chat}:${id}` : quoted === undefined ? undefined : `${chat}:${quoted}`
  }
}

/** A button press on a message the bot sent: what the button says, as the contact's answer. */
const callbackEvent = (q: Json): InboundEvent => {
  const id = str(q.id)
  const message = obj(q.message)
  const chat = str(obj(message.chat).id) ?? str(obj(q.from).id)
  if (id === undefined || chat === undefined) {
    return { _tag: "Unusable", reason: "A callback query without id.", detail: q }
  }
  const data = str(q.data) ?? ""
  const quoted = str(message.message_id)
  return {
    _tag: "ContactMessage",
    providerMessageId: `${chat}:callback:${id}`,
    thread: chat,
    phone: undefined,
    profileName: nameOf(obj(q.from)),
    // a callback query carries no date of its own: the message it answers is the latest the contact could see
    sentAt: new Date(),
    type: "callback_query",
    text: clean(data),
    media: [],
    attachments: [{ type: "callback_query", data }],
    quotedId: quoted === undefined ? undefined : `${chat}:${quoted}`
  }
}

/** The events of one verified update (Telegram posts one update a request); what we cannot use is `Unusable`. */
export const parse = (_secrets: TelegramSecrets, body: Uint8Array): ReadonlyArray<InboundEvent> => {
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(body).toString("utf8"))
  } catch {
    return [{ _tag: "Unusable", reason: "The body is not JSON.", detail: null }]
  }
  const update = obj(json)
  if (str(update.update_id) === undefined) {
    return [{ _tag: "Unusable", reason: "An update without update_id.", detail: null }]
  }
  if (update.message !== undefined) return [messageEvent(obj(update.message), false)]
  if (update.edited_message !== undefined) return [messageEvent(obj(update.edited_message), true)]
  if (update.callback_query !== undefined) return [callbackEvent(obj(update.callback_query))]
  const kind = Object.keys(update).find((k) => k !== "update_id") ?? "empty"
  return [{ _tag: "Unusable", reason: `Unsupported update ${kind}.`, detail: { update_id: update.update_id } }]
}
