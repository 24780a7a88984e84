/**
 * Reply-webhook signatures (SPEC.md 6.2). `X-Service-Signature: sha256=<lowercase hex HMAC-SHA256 of
 * "<timestamp>.<raw body>">` keyed with the channel's client secret, plus the Standard Webhooks headers
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC of "<id>.<timestamp>.<body>">`,
 * keyed with the same secret's bytes, i.e. `whsec_` + base64(client secret) for their libraries).
 */
import { createHmac, timingSafeEqual } from "node:crypto"

export const WEBHOOK_TOLERANCE_SECONDS = 300

export const serviceSignature = (secret: string, timestamp: string, rawBody: string) =>
  `sha256=${createHmac("sha256", secret).update(`${timestamp}.${rawBody}`).digest("hex")}`

export const standardSignature = (secret: string, id: string, timestamp: string, rawBody: string) =>
  `v1,${createHmac("sha256", Buffer.from(secret, "utf8")).update(`${id}.${timestamp}.${rawBody}`).digest("base64")}`

export const webhookHeaders = (secret: string, messageId: string, timestamp: string, rawBody: string) => ({
  "content-type": "application/json",
  "x-service-signature": serviceSignature(secret, timestamp, rawBody),
  "x-service-timestamp": timestamp,
  "webhook-id": messageId,
  "webhook-timestamp": timestamp,
  "webhook-signature": standardSignature(secret, messageId, timestamp, rawBody)
})

/** The receiver's side of SPEC.md 6.2: fresh timestamp, then a constant-time comparison. */
export const verifyServiceSignature = (
  secret: string,
  headers: { readonly signature: string | undefined; readonly timestamp: string | undefined },
  rawBody: string,
  nowSeconds = Math.floor(Date.now() / 1000)
): boolean => {
  const { signature, timestamp } = headers
  if (signature === undefined || timestamp === undefined || !/^\d+$/.test(timestamp)) return false
  if (Math.abs(nowSeconds - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) return false
  const expected = Buffer.from(serviceSignature(secret, timestamp, rawBody))
  const given = Buffer.from(signature)
  return expected.length === given.length && timingSafeEqual(expected, given)
}
