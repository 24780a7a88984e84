/** A contact writing through the web-chat receiver, as a chat front end does. */
import { expect } from "@effect/vitest"
import { ReceiverAnswer } from "@parley/domain"
import { Effect } from "effect"
import { bodyAs } from "./Contract.js"
import { fetchJson, TestServer } from "./TestServer.js"

/** A web channel's credentials, as `basic` and `say` take them. */
export interface WebCredentials {
  readonly client_id: string
  readonly client_secret: string
}

/**
 * A channel as create (or rotate) answers it, checked to carry both credentials (the contract types them
 * `string | null`): the channel with `client_id` and `client_secret` narrowed to strings.
 */
export const webCredentials = <C extends { readonly client_id: string | null; readonly client_secret: string | null }>(
  channel: C
): Omit<C, "client_id" | "client_secret"> & WebCredentials => {
  expect(channel.client_id).not.toBeNull()
  expect(channel.client_secret).not.toBeNull()
  return { ...channel, client_id: channel.client_id!, client_secret: channel.client_secret! }
}

/** An HTTP Basic authorization header's value for a client id and secret, right or wrong. */
export const basicAuth = (clientId: string, secret: string) =>
  `Basic ${Buffer.from(`${clientId}:${secret}`).toString("base64")}`

/** HTTP Basic credentials of a web channel. */
export const basic = (c: WebCredentials) => basicAuth(c.client_id, c.client_secret)

/** Posts `message` as `contactId` to the receiver; the stored message's id. */
export const say = (channel: WebCredentials, contactId: string, message: string) =>
  Effect.flatMap(TestServer, ({ receiverUrl }) =>
    fetchJson(`${receiverUrl}/web-chat/message`, {
      method: "POST",
      headers: { authorization: basic(channel), "content-type": "application/json" },
      body: JSON.stringify({ contact_id: contactId, message })
    })).pipe(Effect.map((r) => {
      expect(r.status).toBe(200)
      return bodyAs(r, ReceiverAnswer).data!.message_id
    }))

/** `POST /api/user/web-chat/initiate` for `contactId` (named Dana) with the channel's Basic credentials. */
export const initiate = (channel: WebCredentials, contactId: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchJson(`${baseUrl}/api/user/web-chat/initiate`, {
      method: "POST",
      headers: { authorization: basic(channel), "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ contact_id: contactId, name: "Dana" })
    }))
