/**
 * What every Meta webhook shares (WhatsApp, Messenger, Instagram): the verify handshake Meta makes when the webhook
 * is set in the app's dashboard, and the `X-Hub-Signature-256` over the raw body, keyed with the app secret.
 */
import type { ProviderRequest } from "@parley/domain"
import { Option } from "effect"
import { createHmac } from "node:crypto"
import { equalSecrets } from "../../identity/Secrets.js"

export interface MetaSecrets {
  readonly app_secret: string
  readonly verify_token: string
}

/** `GET webhook_url?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`: the challenge when the token matches. */
export const handshake = (secrets: MetaSecrets, request: ProviderRequest) => {
  const { query } = request
  const token = query["hub.verify_token"]
  const challenge = query["hub.challenge"]
  return query["hub.mode"] === "subscribe" && token !== undefined && challenge !== undefined &&
      equalSecrets(token, secrets.verify_token)
    ? Option.some(challenge)
    : Option.none()
}

/** `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw body with the app secret, compared in constant time. */
export const verify = (secrets: MetaSecrets, request: ProviderRequest) => {
  const header = request.headers["x-hub-signature-256"]
  if (header === undefined || !header.startsWith("sha256=")) return false
  const expected = createHmac("sha256", secrets.app_secret).update(request.body).digest("hex")
  return equalSecrets(header.slice(7).toLowerCase(), expected)
}
