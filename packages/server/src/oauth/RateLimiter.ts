/**
 * Fixed-window counters per key, in this process's memory: enough to stop one address from flooding
 * registration or guessing passwords. With several api processes each counts on its own.
 */
export const makeRateLimiter = (options: { readonly limit: number; readonly windowMs: number }) => {
  const windows = new Map<string, { count: number; resetAt: number }>()
  return {
    /** Counts one attempt; the seconds to wait when the key is over its limit, else undefined. */
    take: (key: string, now = Date.now()): number | undefined => {
      if (windows.size > 10_000) {
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k)
      }
      let window = windows.get(key)
      if (window === undefined || window.resetAt <= now) {
        window = { count: 0, resetAt: now + options.windowMs }
        windows.set(key, window)
      }
      if (window.count >= options.limit) return Math.max(1, Math.ceil((window.resetAt - now) / 1000))
      window.count++
      return undefined
    },
    /** The seconds to wait when the key is at its limit, without counting an attempt. */
    blocked: (key: string, now = Date.now()): number | undefined => {
      const window = windows.get(key)
      if (window === undefined || window.resetAt <= now || window.count < options.limit) return undefined
      return Math.max(1, Math.ceil((window.resetAt - now) / 1000))
    }
  }
}
