/**
 * An email channel's IMAP mailbox (imapflow): a login check, and a session on the INBOX that lists mail above a UID,
 * fetches one mail's bytes and waits for new mail (IDLE, which imapflow starts when the connection is quiet, tells
 * of it at once; the poll interval bounds the wait when the server says nothing). The password is never logged:
 * imapflow's logger is off, and failures keep only the server's words.
 */
import { SendFailure } from "@parley/domain"
import { Duration, Effect, Queue, Runtime } from "effect"
import { ImapFlow } from "imapflow"

export interface MailServer {
  readonly host: string
  readonly port: number
  readonly secure: boolean
  readonly user: string
  readonly password: string
}

const TIMEOUT_MS = 20_000

const client = (server: MailServer, verifyOnly: boolean) =>
  new ImapFlow({
    host: server.host,
    port: server.port,
    secure: server.secure,
    auth: { user: server.user, pass: server.password },
    logger: false,
    verifyOnly,
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    // IDLE soon after each sync, so new mail is told at once
    autoIdleDelay: 1_000,
    // servers drop an IDLE after 30 minutes (RFC 9051): it is renewed before
    maxIdleTime: 10 * 60_000
  })

/** An IMAP failure by meaning: a refused login revokes, anything else (unreachable, dropped) is transient. */
export const imapFailure = (server: MailServer, cause: unknown): SendFailure => {
  const e = cause as { authenticationFailed?: boolean; responseText?: string; message?: string; code?: string }
  const words = e.responseText ?? e.message ?? String(cause)
  return e.authenticationFailed === true
    ? new SendFailure({
      kind: "auth_revoked",
      message: `The IMAP server ${server.host}:${server.port} refused the login of ${server.user}: ${words}`,
      status: null,
      code: null,
      excerpt: null
    })
    : new SendFailure({
      kind: "transient",
      message: `The IMAP server ${server.host}:${server.port} could not be reached or failed: ${words}`,
      status: null,
      code: null,
      excerpt: null
    })
}

/** Logs in and out: whether the IMAP server takes the mailbox's login. */
export const checkImap = (server: MailServer) =>
  Effect.tryPromise({
    try: () => client(server, true).connect(),
    catch: (cause) => imapFailure(server, cause)
  }).pipe(
    Effect.timeout(Duration.millis(TIMEOUT_MS * 2)),
    Effect.catchTag("TimeoutException", (e) => Effect.fail(imapFailure(server, e))),
    Effect.withSpan("Mailbox.check")
  )

/** A mail above the watermark: its UID, size and when the server received it. */
export interface MailRef {
  readonly uid: number
  readonly size: number
  readonly receivedAt: Date | undefined
}

/** A session on the INBOX, open until its scope closes. */
export const openInbox = (server: MailServer) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const signals = yield* Queue.sliding<void>(1)
    const imap = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const c = client(server, false)
          // a dropped connection wakes the waiter, whose next command then fails and reconnects
          c.on("exists", () => Runtime.runFork(runtime)(Queue.offer(signals, undefined)))
          c.on("close", () => Runtime.runFork(runtime)(Queue.offer(signals, undefined)))
          c.on("error", () => undefined)
          await c.connect()
          await c.mailboxOpen("INBOX")
          return c
        },
        catch: (cause) => imapFailure(server, cause)
      }),
      (c) => Effect.promise(() => c.logout().catch(() => c.close()))
    )
    const call = <A>(what: string, f: () => Promise<A>) =>
      Effect.tryPromise({ try: f, catch: (cause) => imapFailure(server, cause) }).pipe(
        Effect.timeoutFail({
          duration: Duration.millis(TIMEOUT_MS * 3),
          onTimeout: () => imapFailure(server, new Error(`${what} timed out`))
        })
      )
    const uidValidity = () => {
      if (imap.mailbox === false) throw new Error("The INBOX is not open")
      return imap.mailbox.uidValidity
    }
    return {
      uidValidity: call("SELECT", async () => uidValidity()),
      /** UIDs above `lastUid`, oldest first (`n:*` names the newest mail even below `n`: it is filtered). */
      above: (lastUid: number) =>
        call("FETCH", () =>
          imap.fetchAll(`${lastUid + 1}:*`, { uid: true, size: true, internalDate: true }, { uid: true }))
          .pipe(Effect.map((all) =>
            all.filter((m) =>
              m.uid > lastUid
            ).sort((a, b) => a.uid - b.uid).map((m): MailRef => ({
              uid: m.uid,
              size: m.size ?? 0,
              receivedAt: m.internalDate === undefined ? undefined : new Date(m.internalDate)
            }))
          )),
      /** The UIDs of mail received since `since` (by the server's clock), for a mailbox read the first time. */
      since: (since: Date) =>
        call("SEARCH", async () => {
          const uids = await imap.search({ since }, { uid: true })
          if (uids === false || uids === undefined || uids.length === 0) {
            return []
          }
          const found = await imap.fetchAll(uids.join(","), { uid: true, internalDate: true }, { uid: true })
          return found.filter((m) =>
            m.internalDate !== undefined && new Date(m.internalDate) >= since
          )
            .map((m) => m.uid)
        }),
      uidNext: call("STATUS", async () => imap.mailbox === false ? 1 : imap.mailbox.uidNext),
      source: (uid: number) =>
        call("FETCH", async () => {
          const found = await imap.fetchOne(String(uid), { uid: true, source: true }, { uid: true })
          return found === false || found.source === undefined ? undefined : new Uint8Array(found.source)
        }),
      /** Until new mail is told (or the connection drops), at most `ms`. */
      waitForMail: (ms: number) =>
        Effect.raceFirst(Queue.take(signals), Effect.sleep(Duration.millis(ms))).pipe(
          Effect.zipRight(Effect.suspend(() => imap.usable ? Effect.void : Effect.fail(imapFailure(server, "dropped"))))
        )
    }
  })

export type Inbox = Effect.Effect.Success<ReturnType<typeof openInbox>>
