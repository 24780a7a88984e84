/** Pure checks for the channel allowlists: origins, IPs and CIDR ranges. */
import { isIP } from "node:net"

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
