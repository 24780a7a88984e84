/**
 * Reads every active email channel's INBOX (docs/channels.md, "Email"), on one runner of the cluster (a singleton,
 * like the retry sweep): per mailbox a session that IDLEs, with a poll every EMAIL_POLL_INTERVAL_MS should the
 * server say nothing, fetching the mail above the stored watermark, oldest first. Each mail goes through the one
 * inbound path (MailIngest.ts) and only then does the watermark move past it, so a crash reads it again and its
 * Message-ID stores it once. A mailbox read the first time starts with the mail received since the channel was
 * connected. The channels are read again every few seconds: one added, changed or deactivated is picked up.
 */
import { Singleton } from "@effect/cluster"
import { Duration, Effect, FiberMap, Option, Schedule } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { ProviderCredentials } from "../ProviderCredentials.js"
import { ChannelProviders } from "../Providers.js"
import { type EmailCredentials, MAX_MAIL_BYTES } from "./Email.js"
import { type Inbox, type MailServer, openInbox } from "./Mailbox.js"
import { type MailboxChannel, MailboxRepo } from "./MailboxRepo.js"
import { MailIngest } from "./MailIngest.js"

/** Mail read in one pass, so a full mailbox moves its watermark as it goes. */
const BATCH = 50
/** A mailbox first read takes mail received this long before the channel was connected too (clocks differ). */
const FIRST_READ_SLACK_MS = 5 * 60_000

export const MailboxSyncLive = Singleton.make(
  "Parley/mailbox-sync",
  Effect.gen(function*() {
    const config = yield* AppConfig
    const repo = yield* MailboxRepo
    const ingest = yield* MailIngest
    const providerCredentials = yield* ProviderCredentials
    const email = Option.getOrThrow((yield* ChannelProviders).forKind("email"))
    const pollMs = config.emailPollIntervalMs
    const running = yield* FiberMap.make<number>()
    const versions = new Map<number, string>()

    /** Where reading resumes: the watermark, or for a mailbox read the first time, the mail since connecting. */
    const startOf = (channel: MailboxChannel, mailbox: string, inbox: Inbox, validity: number) =>
      Effect.gen(function*() {
        const mark = yield* repo.watermark(channel.id)
        if (Option.isSome(mark) && mark.value.mailbox === mailbox && mark.value.uidvalidity === validity) {
          return mark.value.last_uid
        }
        const since = yield* inbox.since(new Date(channel.created_at.getTime() - FIRST_READ_SLACK_MS))
        const start = since.length > 0 ? since.reduce((a, b) => Math.min(a, b)) - 1 : (yield* inbox.uidNext) - 1
        yield* repo.advance(channel.id, mailbox, validity, start)
        return start
      })

    /** Every mail above the watermark, each stored before the watermark moves past it. */
    const pass = (channel: MailboxChannel, credentials: EmailCredentials, imap: MailServer, inbox: Inbox) =>
      Effect.gen(function*() {
        const validity = Number(yield* inbox.uidValidity)
        const mailbox = `${imap.user}@${imap.host}:${imap.port}`
        let last = yield* startOf(channel, mailbox, inbox, validity)
        for (;;) {
          const refs = (yield* inbox.above(last)).slice(0, BATCH)
          for (const ref of refs) {
            const id = `${validity}.${ref.uid}`
            if (ref.size > MAX_MAIL_BYTES) {
              yield* ingest.unusable(channel, `A mail of ${ref.size} bytes, over the limit of ${MAX_MAIL_BYTES}.`, {
                id
              })
            } else {
              const raw = yield* inbox.source(ref.uid)
              if (raw !== undefined) yield* ingest.ingest(channel, credentials, raw, id, ref.receivedAt)
            }
            last = ref.uid
          }
          // once the batch is stored: a crash before this reads the batch again, and its Message-IDs store nothing twice
          if (refs.length > 0) yield* repo.advance(channel.id, mailbox, validity, last)
          if (refs.length < BATCH) return
        }
      })

    /** One mailbox, for as long as its channel is unchanged: a session, passes, waits; reconnects after a failure. */
    const follow = (channel: MailboxChannel) =>
      Effect.gen(function*() {
        const credentials: EmailCredentials = yield* providerCredentials.of(email, channel.credentials_ciphertext)
        if (credentials.imap === undefined) return yield* Effect.never
        const imap = credentials.imap
        const session = Effect.scoped(Effect.gen(function*() {
          const inbox = yield* openInbox(imap)
          for (;;) {
            yield* pass(channel, credentials, imap, inbox)
            yield* inbox.waitForMail(pollMs)
          }
        }))
        yield* session.pipe(
          Effect.tapErrorCause((cause) =>
            Effect.logWarning("An email channel's mailbox could not be read; retrying", cause)
          ),
          Effect.retry(Schedule.exponential(Duration.seconds(1)).pipe(Schedule.union(Schedule.spaced(pollMs)))),
          Effect.annotateLogs({ channel_id: channel.id, kind: "email" })
        )
      })

    /** Starts a session for each new or changed channel, stops those of channels gone or deactivated. */
    const refresh = Effect.gen(function*() {
      const channels = yield* repo.mailboxes
      const seen = new Set<number>()
      for (const channel of channels) {
        seen.add(channel.id)
        // new credentials or another pipeline: the session starts again with the channel as it is now
        const version = `${channel.credentials_ciphertext}|${channel.pipeline_id}`
        if (versions.get(channel.id) === version) continue
        versions.set(channel.id, version)
        yield* FiberMap.run(running, channel.id, follow(channel))
      }
      for (const id of [...versions.keys()]) {
        if (!seen.has(id)) {
          versions.delete(id)
          yield* FiberMap.remove(running, id)
        }
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("Reading the email channels failed", cause)))

    yield* Effect.repeat(refresh, Schedule.spaced(Duration.millis(Math.min(5_000, pollMs))))
  })
)
