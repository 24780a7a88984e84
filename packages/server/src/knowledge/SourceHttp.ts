/**
 * One GET of a knowledge source's page, under the outbound policy of outbound/OutboundHttp.ts: a literal private
 * address is refused before connecting and every address a name resolves to is checked when connecting (so DNS
 * rebinding cannot slip one past), unless OUTBOUND_ALLOW_PRIVATE. Link-local addresses (169.254.0.0/16, fe80::/10,
 * where clouds serve instance credentials) are refused even then: a crawl follows links a third party wrote, and no
 * site worth reading lives there. The body is read up to a byte limit and the whole exchange up to a time limit.
 * A redirect is returned, not followed: SourceFetch checks its target as a new request.
 */
import { isPrivateAddress } from "@parley/domain"
import { Effect } from "effect"
import * as Dns from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import { BlockList, isIP } from "node:net"

export interface Policy {
  readonly allowPrivate: boolean
  readonly timeoutMs: number
  readonly userAgent: string
}

export type Fetched =
  | { readonly _tag: "Redirect"; readonly location: string }
  | { readonly _tag: "Answer"; readonly status: number; readonly contentType: string; readonly body: Buffer }

export interface HttpFailure {
  readonly reason: "private_address" | "timeout" | "too_large" | "unreadable"
  readonly message: string
}

const linkLocal = (() => {
  const list = new BlockList()
  list.addSubnet("169.254.0.0", 16, "ipv4")
  list.addSubnet("fe80::", 10, "ipv6")
  return list
})()

/** Whether a source may connect to `address` (an IP literal). */
export const reachable = (address: string, allowPrivate: boolean) => {
  const version = isIP(address)
  if (version !== 0 && linkLocal.check(address, version === 4 ? "ipv4" : "ipv6")) return false
  return allowPrivate || !isPrivateAddress(address)
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

export const fetchOnce = (
  target: URL,
  policy: Policy & { readonly maxBytes: number }
): Effect.Effect<Fetched, HttpFailure> =>
  Effect.suspend(() => {
    const host = target.hostname.replace(/^\[|\]$/g, "")
    if (isIP(host) !== 0 && !reachable(host, policy.allowPrivate)) {
      return Effect.fail<HttpFailure>({
        reason: "private_address",
        message: `Refusing to fetch ${target.href}: ${host} is a private address`
      })
    }
    const lookup = ((hostname: string, options: Dns.LookupOptions, callback: any) =>
      Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
        if (error) return callback(error)
        const usable = (addresses as Array<Dns.LookupAddress>).filter((a) =>
          reachable(a.address, policy.allowPrivate)
        )
        if (usable.length === 0) {
          return callback(
            Object.assign(new Error(`${hostname} resolves only to private addresses`), { code: "EPRIVATE" })
          )
        }
        return options.all ? callback(null, usable) : callback(null, usable[0]!.address, usable[0]!.family)
      })) as typeof Dns.lookup

    return Effect.async<Fetched, HttpFailure>((resume) => {
      let done = false
      const finish = (effect: Effect.Effect<Fetched, HttpFailure>) => {
        if (done) return
        done = true
        clearTimeout(deadline)
        resume(effect)
      }
      const tooLarge = () =>
        Effect.fail<HttpFailure>({
          reason: "too_large",
          message: `${target.href} is larger than ${policy.maxBytes} bytes`
        })
      const client = target.protocol === "https:" ? Https : Http
      const req = client.request(target, {
        method: "GET",
        headers: { "User-Agent": policy.userAgent, "Accept": "*/*", "Accept-Encoding": "identity" },
        lookup,
        agent: false
      }, (res) => {
        const status = res.statusCode ?? 0
        const location = res.headers.location
        if (REDIRECTS.has(status) && location !== undefined) {
          finish(Effect.succeed({ _tag: "Redirect", location }))
          return req.destroy()
        }
        if (Number(res.headers["content-length"] ?? 0) > policy.maxBytes) {
          finish(tooLarge())
          return req.destroy()
        }
        const chunks: Array<Buffer> = []
        let size = 0
        res.on("data", (chunk: Buffer) => {
          size += chunk.length
          // past the limit nothing more is kept or read: the connection is dropped
          if (size > policy.maxBytes) {
            finish(tooLarge())
            req.destroy()
          } else {
            chunks.push(chunk)
          }
        })
        res.on("end", () =>
          finish(Effect.succeed({
            _tag: "Answer",
            status,
            contentType: String(res.headers["content-type"] ?? ""),
            body: Buffer.concat(chunks)
          })))
        res.on("error", (e) => finish(Effect.fail({ reason: "unreadable", message: `${target.href}: ${e.message}` })))
      })
      // the whole exchange, body included, is bounded: a page that trickles forever is a timeout too
      const deadline = setTimeout(() => {
        finish(
          Effect.fail({ reason: "timeout", message: `${target.href} did not finish within ${policy.timeoutMs} ms` })
        )
        req.destroy()
      }, policy.timeoutMs)
      req.on("error", (e: NodeJS.ErrnoException) =>
        finish(Effect.fail(
          e.code === "EPRIVATE"
            ? { reason: "private_address", message: `Refusing to fetch ${target.href}: ${e.message}` }
            : { reason: "unreadable", message: `${target.href} could not be fetched (${e.code ?? e.message})` }
        )))
      req.end()
      return Effect.sync(() => {
        done = true
        clearTimeout(deadline)
        req.destroy()
      })
    })
  })
