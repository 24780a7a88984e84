/**
 * One mail of an email channel into the one inbound path (docs/channels.md, "Email"), whether the mailbox sync read
 * it over IMAP or the simulator's contact wrote it: parsed, put on its thread, and stored through
 * `ProviderInbound.applyTo` once per Message-ID.
 *
 * The thread (the conversation's `external_chat_id`) is the conversation of a stored message of the channel, ours
 * or the contact's, that the mail names in `In-Reply-To` or `References`; else, for a `Re:` without those headers,
 * the sender's newest thread with the same subject; else a new one, keyed by the thread's first Message-ID, so a
 * new subject from the same contact is a new conversation with the same contact.
 */
import { type ContactMessageEvent, type InboundEvent, type InboundMedia } from "@parley/domain"
import { Effect, Option } from "effect"
import { ProviderInbound } from "../ProviderInbound.js"
import { type EmailCredentials, type EmailEntry, MAX_MAIL_BYTES } from "./Email.js"
import { type MailboxChannel, MailboxRepo } from "./MailboxRepo.js"
import { isReplySubject, parseMail, subjectKey } from "./MailParse.js"

const MAX_FILE_BYTES = 25 * 1024 * 1024
const MAX_FILES = 20

export class MailIngest extends Effect.Service<MailIngest>()("@parley/server/MailIngest", {
  dependencies: [ProviderInbound.Default, MailboxRepo.Default],
  effect: Effect.gen(function*() {
    const inbound = yield* ProviderInbound
    const repo = yield* MailboxRepo

    const unusable = (channel: MailboxChannel, reason: string, detail: unknown) =>
      inbound.applyTo(channel, [{ _tag: "Unusable", reason, detail }])

    /**
     * Stores the mail (`fallbackId` names one without a Message-ID: its place in the mailbox). What cannot be
     * stored as a contact's message (a mail from the mailbox itself, one without a sender) is recorded as unusable.
     */
    const ingest = Effect.fn("MailIngest.ingest")(function*(
      channel: MailboxChannel,
      credentials: EmailCredentials,
      raw: Uint8Array,
      fallbackId: string,
      receivedAt?: Date
    ) {
      if (raw.byteLength > MAX_MAIL_BYTES) {
        return yield* unusable(channel, `A mail of ${raw.byteLength} bytes, over the limit of ${MAX_MAIL_BYTES}.`, {
          id: fallbackId
        })
      }
      // a mail that cannot be parsed is recorded and passed over: read again, it would fail again
      const parsed = yield* Effect.either(Effect.tryPromise(() => parseMail(raw)))
      if (parsed._tag === "Left") {
        return yield* unusable(channel, `A mail that cannot be read: ${String(parsed.left.cause)}`, { id: fallbackId })
      }
      const mail = parsed.right
      const messageId = mail.messageId ?? `<${fallbackId}@${credentials.address.split("@").pop()}>`
      if (mail.from === undefined) {
        return yield* unusable(channel, "A mail without a sender.", { message_id: messageId })
      }
      if (mail.from.address === credentials.address.toLowerCase()) {
        // the mailbox's own mail (a copy of what it sent): answering it would answer ourselves
        return yield* unusable(channel, "A mail from the mailbox's own address.", { message_id: messageId })
      }
      const referenced = [...new Set([...(mail.inReplyTo === undefined ? [] : [mail.inReplyTo]), ...mail.references])]
      const byIds = yield* repo.threadByIds(channel.id, referenced)
      const key = subjectKey(mail.subject)
      const bySubject = Option.isNone(byIds) && referenced.length === 0 && isReplySubject(mail.subject) && key !== ""
        ? yield* repo.threadBySubject(channel.id, mail.from.address, key)
        : byIds
      const thread = Option.getOrElse(bySubject, () => mail.references[0] ?? mail.inReplyTo ?? messageId)
      const tooLarge = mail.files.filter((f) => f.content.byteLength > MAX_FILE_BYTES)
      const media: Array<InboundMedia> = mail.files.filter((f) => f.content.byteLength <= MAX_FILE_BYTES)
        .slice(0, MAX_FILES)
        .map((f, i) => ({
          providerId: `${messageId}#${i}`,
          mimetype: f.mimetype,
          name: f.name,
          caption: undefined,
          content: f.content
        }))
      const entry: EmailEntry & { readonly subject_key: string } & Record<string, unknown> = {
        type: "email",
        subject: mail.subject,
        subject_key: key,
        from: mail.from.address,
        reply_to: mail.replyTo?.address ?? null,
        to: mail.to,
        cc: mail.cc,
        message_id: messageId,
        references: mail.references.length > 0
          ? mail.references
          : mail.inReplyTo === undefined
          ? []
          : [mail.inReplyTo],
        original_text: mail.original,
        automated: mail.automated ?? null
      }
      const event: ContactMessageEvent = {
        _tag: "ContactMessage",
        providerMessageId: messageId,
        thread,
        phone: undefined,
        email: mail.from.address,
        profileName: mail.from.name,
        sentAt: mail.date ?? receivedAt ?? new Date(),
        type: "email",
        text: [
          mail.text,
          ...tooLarge.map((f) => `[${f.name} (${f.content.byteLength} bytes) is over the limit of ${MAX_FILE_BYTES}]`)
        ].filter((t) => t !== "").join("\n"),
        media,
        attachments: [entry],
        quotedId: mail.inReplyTo,
        automated: mail.automated
      }
      const events: ReadonlyArray<InboundEvent> = [event]
      yield* inbound.applyTo(channel, events)
    })

    return { ingest, unusable }
  })
}) {}
