/**
 * What the email simulator's contacts see (simulator/EmailSimulator.ts): a simulated mailbox's mail, by contact
 * address, in the memory of the process that sends (the `all` role), the oldest dropped. The adapter records here
 * what it would have sent over SMTP; the simulator records what the contact wrote.
 */
import { Effect } from "effect"

export interface SimulatedMail {
  readonly id: string
  readonly direction: "in" | "out"
  readonly subject: string
  readonly text: string
  readonly files: ReadonlyArray<string>
  readonly in_reply_to: string | null
  readonly at: string
}

const MAX_THREAD = 200
const MAX_THREADS = 1_000

export class SimulatedMailboxes extends Effect.Service<SimulatedMailboxes>()("@parley/server/SimulatedMailboxes", {
  sync: () => {
    const threads = new Map<string, Array<SimulatedMail>>()
    const append = (mailbox: string, contact: string, mail: SimulatedMail) => {
      const id = `${mailbox}/${contact.toLowerCase()}`
      let thread = threads.get(id)
      if (thread === undefined) {
        if (threads.size >= MAX_THREADS) threads.delete(threads.keys().next().value!)
        thread = []
        threads.set(id, thread)
      }
      thread.push(mail)
      if (thread.length > MAX_THREAD) thread.splice(0, thread.length - MAX_THREAD)
    }
    return {
      append,
      /** A mail the adapter sent from `mailbox`: shown to its recipient. */
      received: (mailbox: string, m: {
        readonly messageId: string
        readonly to: string
        readonly subject: string
        readonly text: string
        readonly inReplyTo?: string
        readonly files: ReadonlyArray<string>
      }) =>
        append(mailbox, m.to, {
          id: m.messageId,
          direction: "out",
          subject: m.subject,
          text: m.text,
          files: m.files,
          in_reply_to: m.inReplyTo ?? null,
          at: new Date().toISOString()
        }),
      thread: (mailbox: string, contact: string): ReadonlyArray<SimulatedMail> =>
        threads.get(`${mailbox}/${contact.toLowerCase()}`) ?? []
    }
  }
}) {}
