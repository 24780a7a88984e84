/** Pure checks for the channel allowlists: origins, IPs and CIDR ranges. */
import { BlockList, isIP } from "node:net"

/**
 * `https://shop.example.com` or `http://localhost:5173`: scheme, host and optional port, nothing else.
 * Scheme and host are case-insensitive (`normaliseOrigin` lower-cases them for storage).
 */
export const isOrigin = (s: string): boolean => {
  try {
    const u = new URL(s)
    return (u.protocol === "http:" || u.protocol === "https:") && u.origin === normaliseOrigin(s)
  } catch {
    return false
  }
}

export const normaliseOrigin = (s: string): string => s.replace(/\/$/, "").toLowerCase()

export const isIpOrCidr = (s: string): boolean => {
  const [ip, bits, ...rest] = s.split("/")
  if (rest.length > 0 || ip === undefined) return false
  const version = isIP(ip)
  if (version === 0) return false
  if (bits === undefined) return true
  if (!/^\d{1,3}$/.test(bits)) return false
  const n = Number(bits)
  return n >= 0 && n <= (version === 4 ? 32 : 128)
}

export const isHttpUrl = (s: string): boolean => {
  try {
    const u = new URL(s)
    return u.protocol === "http:" || u.protocol === "https:"
  } catch {
    return false
  }
}

/** Whether `ip` falls in any entry (address or CIDR) of an allowlist; an empty list allows everything. */
export const ipAllowed = (ip: string, allowlist: ReadonlyArray<string>): boolean => {
  if (allowlist.length === 0) return true
  const address = ip.startsWith("::ffff:") && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip
  const version = isIP(address)
  if (version === 0) return false
  const list = new BlockList()
  for (const entry of allowlist) {
    const [base, bits] = entry.split("/")
    const entryVersion = isIP(base ?? "")
    if (entryVersion === 0) continue
    const type = entryVersion === 4 ? "ipv4" : "ipv6"
    if (bits === undefined) list.addAddress(base!, type)
    else list.addSubnet(base!, Number(bits), type)
  }
  return list.check(address, version === 4 ? "ipv4" : "ipv6")
}

/** The allowlist holds normalised origins; a request without an Origin header is not a browser's. */
export const originAllowed = (origin: string | undefined, allowlist: ReadonlyArray<string>): boolean =>
  allowlist.length === 0 || origin === undefined || allowlist.includes(normaliseOrigin(origin))

const privateRanges = (() => {
  const list = new BlockList()
  for (
    const [net, bits] of [
      ["0.0.0.0", 8],
      ["10.0.0.0", 8],
      ["100.64.0.0", 10],
      ["127.0.0.0", 8],
      ["169.254.0.0", 16],
      ["172.16.0.0", 12],
      ["192.0.0.0", 24],
      ["192.168.0.0", 16],
      ["198.18.0.0", 15],
      ["224.0.0.0", 4],
      ["240.0.0.0", 4]
    ] as const
  ) {
    list.addSubnet(net, bits, "ipv4")
  }
  // ::/96 holds ::, ::1 and the deprecated IPv4-compatible form ([::127.0.0.1] is ::7f00:1). IPv4-mapped
  // addresses (::ffff:7f00:1) are matched by BlockList against the IPv4 ranges; a ::ffff:0:0/96 entry here
  // would also match every IPv4 address, public ones included.
  for (const [net, bits] of [["::", 96], ["fc00::", 7], ["fe80::", 10], ["ff00::", 8]] as const) {
    list.addSubnet(net, bits, "ipv6")
  }
  return list
})()

/** Loopback, private, link-local, carrier-grade NAT, multicast and reserved ranges: never targets of outbound calls. */
export const isPrivateAddress = (ip: string): boolean => {
  const version = isIP(ip)
  if (version === 0) return true
  if (version === 4) return privateRanges.check(ip, "ipv4")
  // NAT64 (RFC 6052's well-known prefix 64:ff9b::/96) reaches the IPv4 address in its last 32 bits: that
  // address decides. The local-use prefix 64:ff9b:1::/48 (RFC 8215) translates into a network of its own.
  const groups = ipv6Groups(ip)
  if (groups[0] === 0x64 && groups[1] === 0xff9b) {
    if (groups.slice(2, 6).every((g) => g === 0)) {
      const [high, low] = [groups[6]!, groups[7]!]
      return privateRanges.check(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, "ipv4")
    }
    if (groups[2] === 1) return true
  }
  return privateRanges.check(ip, "ipv6")
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail as two groups). */
const ipv6Groups = (ip: string): ReadonlyArray<number> => {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip)
  const text = dotted === null
    ? ip
    : ip.slice(0, dotted.index) +
      [[1, 2], [3, 4]].map(([a, b]) => ((Number(dotted[a!]) << 8) | Number(dotted[b!])).toString(16)).join(":")
  const [head, tail] = text.split("::") as [string, string | undefined]
  const parse = (
    part: string | undefined
  ) => (part === undefined || part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)))
  const left = parse(head)
  const right = parse(tail)
  return tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
}

/**
 * The host of a URL that names this machine or a private network without a DNS lookup: an IP literal that
 * `isPrivateAddress` refuses (WHATWG parsing has already turned 127.1, 0x7f000001 and [::ffff:127.0.0.1]
 * into canonical literals), or `localhost` and its subdomains. Other names are checked where they resolve,
 * when the call is made. Undefined for anything else, unparseable URLs included.
 */
export const privateUrlHost = (url: string): string | undefined => {
  let hostname: string
  try {
    hostname = new URL(url).hostname
  } catch {
    return undefined
  }
  const host = hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase()
  if (isIP(host) !== 0) return isPrivateAddress(host) ? host : undefined
  return host === "localhost" || host.endsWith(".localhost") ? host : undefined
}

/** `loopback` in TRUST_PROXY: a proxy on the same host. */
const LOOPBACK = ["127.0.0.0/8", "::1"]

/** TRUST_PROXY's entries (addresses, CIDR ranges, `loopback`), or the first that is none of these. */
export const parseTrustedProxies = (
  value: string
): { readonly entries: ReadonlyArray<string> } | { readonly invalid: string } => {
  const entries: Array<string> = []
  for (const raw of value.split(",").map((s) => s.trim()).filter((s) => s.length > 0)) {
    if (raw === "loopback") entries.push(...LOOPBACK)
    else if (isIpOrCidr(raw)) entries.push(raw)
    else return { invalid: raw }
  }
  return { entries }
}

/**
 * The client's address: the connection's peer, unless the peer is a trusted proxy; then `X-Forwarded-For`
 * read from the right (each proxy appends the address it was connected from), skipping trusted proxies,
 * up to the first address that is not one. An entry that is not an address ends the walk at the hop
 * before it, so a client can never name an address of its choosing past a trusted proxy.
 */
export const clientAddress = (
  peer: string,
  forwardedFor: string | undefined,
  trusted: ReadonlyArray<string>
): string => {
  if (trusted.length === 0 || forwardedFor === undefined || !ipAllowed(peer, trusted)) return peer
  const hops = forwardedFor.split(",").map((s) => s.trim())
  let client = peer
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    if (isIP(hop) === 0) return client
    client = hop
    if (!ipAllowed(hop, trusted)) return hop
  }
  return client
}
