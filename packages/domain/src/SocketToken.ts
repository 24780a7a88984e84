/**
 * The socket join token Initiate hands out (SPEC.md 2.8 `token`): it names one conversation channel and
 * an expiry, signed with a key derived from APP_SECRET. `v1.<conversation id>.<expires unix s>.<hex hmac>`.
 */
import { createHmac, timingSafeEqual } from "node:crypto"

export const SOCKET_TOKEN_TTL_SECONDS = 24 * 60 * 60

export const conversationChannel = (conversationId: number) => `conversation.${conversationId}`

const mac = (key: Uint8Array, conversationId: number, expires: number) =>
  createHmac("sha256", key).update(`socket:${conversationId}:${expires}`).digest("hex")

export const signSocketToken = (
  key: Uint8Array,
  conversationId: number,
  nowSeconds: number,
  ttl = SOCKET_TOKEN_TTL_SECONDS
) => {
  const expires = nowSeconds + ttl
  return `v1.${conversationId}.${expires}.${mac(key, conversationId, expires)}`
}

/** The conversation id the token grants, if it is ours, unexpired and for that channel. */
export const verifySocketToken = (
  key: Uint8Array,
  token: string,
  channel: string,
  nowSeconds: number
): number | undefined => {
  const [version, id, expires, signature] = token.split(".")
  if (version !== "v1" || id === undefined || expires === undefined || signature === undefined) return undefined
  const conversationId = Number(id)
  const expiresAt = Number(expires)
  if (!Number.isInteger(conversationId) || !Number.isInteger(expiresAt) || expiresAt < nowSeconds) return undefined
  if (channel !== conversationChannel(conversationId)) return undefined
  const expected = Buffer.from(mac(key, conversationId, expiresAt), "hex")
  const given = Buffer.from(signature, "hex")
  return expected.length === given.length && timingSafeEqual(expected, given) ? conversationId : undefined
}
