/**
 * The save-time half of OutboundHttp's guard: a channel's `callback_url` or an action's `url` whose host is a
 * loopback, private or link-local address (or `localhost`) is refused when it is saved, naming the field,
 * so the user learns it at once instead of from a failed delivery. Host names are resolved only when a
 * call is made, and an action host made of a `{{variable}}` is known only then: OutboundHttp checks both.
 */
import { privateUrlHost } from "@parley/domain"
import { Effect, Option } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"

export interface TargetIssue {
  readonly field: string
  readonly message: string
}

const originOf = (url: string | undefined) => {
  if (url === undefined) return undefined
  try {
    return new URL(url).origin
  } catch {
    return undefined
  }
}

/** The host part of `scheme://[userinfo@]host[:port]`, or undefined when the URL does not start with a scheme. */
const hostPart = (url: string) => {
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url)?.[1]
  return authority?.slice(authority.lastIndexOf("@") + 1)
}

export class OutboundTargets extends Effect.Service<OutboundTargets>()("@parley/server/OutboundTargets", {
  dependencies: [AppConfig.Default, BoundAddresses.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const bound = yield* BoundAddresses

    /** The demo's webhook sink on this server, which OutboundHttp always calls; the seed points its channel there. */
    const isOwnDemoSink = (url: string) => {
      const target = originOf(url)
      return new URL(url).pathname === "/demo/webhook" && target !== undefined &&
        [bound.apiNow(), Option.getOrUndefined(config.publicUrl)].some((base) => originOf(base) === target)
    }

    /**
     * Why `url` may not be saved in `field` (empty when it may). `{{variable}}` placeholders outside the host are
     * ignored.
     */
    const issues = (field: string, url: string | null | undefined): Array<TargetIssue> => {
      if (config.outboundAllowPrivate || url === null || url === undefined) return []
      const host = hostPart(url)
      if (host === undefined || host.includes("{{")) return []
      const concrete = url.replace(/\{\{[^{}]*\}\}/g, "x")
      const refused = privateUrlHost(concrete)
      if (refused === undefined || isOwnDemoSink(concrete)) return []
      return [{
        field,
        message: `must point at a public address: ${refused} is a loopback, private or link-local address, ` +
          "which this server calls only when OUTBOUND_ALLOW_PRIVATE=true"
      }]
    }

    return { issues }
  })
}) {}
