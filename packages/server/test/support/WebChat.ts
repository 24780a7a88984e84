/** A contact writing through the web-chat receiver, as a chat front end does. */
import { expect } from "@effect/vitest"
import { ReceiverAnswer } from "@parley/domain"
import { Effect } from "effect"
import { bodyAs } from "./Contract.js"
import { fetchJson, TestServer } from "./TestServer.js"

/** HTTP Basic credentials of a web channel. */
export const basic = (c: { client_id: string; client_secret: string }) =>
  `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString("base64")}`

/** Posts `message` as `contactId` to the receiver; the stored message's id. */
export const say = (channel: { client_id: string; client_secret: string }, contactId: string, message: string) =>
  Effect.flatMap(TestServer, ({ receiverUrl }) =>
    fetchJson(`${receiverUrl}/web-chat/message`, {
      method: "POST",
      headers: { authorization: basic(channel), "content-type": "application/json" },
      body: JSON.stringify({ contact_id: contactId, message })
    })).pipe(Effect.map((r) => {
      expect(r.status).toBe(200)
      return bodyAs(r, ReceiverAnswer).data!.message_id
    }))
