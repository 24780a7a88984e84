/**
 * How long a returning visitor's `POST /web-chat/message` takes for each `reply_debounce_ms`, one request
 * at a time (nothing else in flight): the receiver's 200 should not depend on the debounce, which only
 * delays the reply. Three messages from three warmed-up visitors per setting, after each setting's
 * window has passed.
 * Run: BENCH_PG=throwaway BENCH_TOPOLOGY=split npx tsx bench/handover.ts   (or single, or embedded; see support.ts)
 */
import { send, setup, startServer } from "./support.js"

const s = await setup()
try {
  const server = await startServer({ OUTBOUND_ALLOW_PRIVATE: "true" }, s)
  try {
    const { client_id, client_secret } = server.demo.channel
    const basic = {
      authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`,
      "content-type": "application/json"
    }
    const bearer = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
    const debounce = async (ms: number) => {
      const r = await send({
        method: "PUT",
        url: `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`,
        headers: bearer,
        body: JSON.stringify({ reply_debounce_ms: ms })
      })
      if (r.status !== 200) throw new Error(`PUT pipeline: ${r.status} ${r.body}`)
    }
    const post = async (contact: string) => {
      const t0 = performance.now()
      const r = await send({
        method: "POST",
        url: `${server.receiver}/web-chat/message`,
        headers: basic,
        body: JSON.stringify({ contact_id: contact, message: "Hello" })
      })
      if (r.status !== 200) throw new Error(`POST /web-chat/message: ${r.status} ${r.body}`)
      return performance.now() - t0
    }
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))
    // first messages (contact, conversation, opportunity), answered at once
    await debounce(0)
    for (let i = 0; i < 3; i++) await post(`handover-${i}`)
    await pause(3000)
    console.log(`\nA returning visitor's POST /web-chat/message, one at a time, on ${server.label}\n`)
    console.log("| reply_debounce_ms | POST → 200, three messages (ms) |")
    console.log("|---|---|")
    for (const ms of [0, 1000, 3000, 6000]) {
      await debounce(ms)
      await pause(500)
      const took: Array<number> = []
      for (let i = 0; i < 3; i++) took.push(await post(`handover-${i}`))
      console.log(`| ${ms} | ${took.map((t) => t.toFixed(0)).join(", ")} |`)
      await pause(ms + 1500)
    }
  } finally {
    await server.stop()
  }
} finally {
  await s.database.stop()
}
process.exit(0)
