/** A simulator's threads in memory, by channel key and contact: the latest messages of each, the oldest dropped. */
export interface ThreadMessage {
  readonly id: string
  readonly direction: "in" | "out"
  readonly text: string
  readonly at: string
  status: "sent" | "delivered" | "read"
}

const MAX_THREAD = 200
const MAX_THREADS = 1_000

export class SimulatedThreads {
  private readonly threads = new Map<string, Array<ThreadMessage>>()

  append(key: string, contact: string, message: ThreadMessage) {
    const id = `${key}/${contact}`
    let thread = this.threads.get(id)
    if (thread === undefined) {
      if (this.threads.size >= MAX_THREADS) this.threads.delete(this.threads.keys().next().value!)
      thread = []
      this.threads.set(id, thread)
    }
    thread.push(message)
    if (thread.length > MAX_THREAD) thread.splice(0, thread.length - MAX_THREAD)
  }

  /** Whether the contact has written to the channel (a bot may write only to a chat that wrote to it). */
  has(key: string, contact: string) {
    return this.threads.has(`${key}/${contact}`)
  }

  get(key: string, contact: string): ReadonlyArray<ThreadMessage> {
    return this.threads.get(`${key}/${contact}`) ?? []
  }
}
