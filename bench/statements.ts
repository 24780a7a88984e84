/**
 * Statements the server ran so far: the sum of `parley_db_statements_total` over every server process
 * (each serves /metrics on a port of its own; db/StatementCount.ts counts what the SqlClient executes,
 * whichever database it is). The difference over a run, per reply, is the "statements per reply" of
 * docs/benchmarks.md.
 */
import * as Http from "node:http"
import type { Server } from "./support.js"

/** A fresh connection each time: a kept-alive one may be closed by the metrics server as it is reused. */
export const scrape = (url: string) =>
  new Promise<string>((resolve, reject) => {
    Http.get(url, { agent: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("error", reject)
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve(Buffer.concat(chunks).toString()))
    }).on("error", reject)
  })

export const statementCount = async (server: Server) => {
  let sum = 0
  for (const p of server.processes) {
    const body = await scrape(p.metrics!)
    sum += Number(/^parley_db_statements_total(?:\{[^}]*\})? (\d+)/m.exec(body)?.[1] ?? NaN)
  }
  return sum
}

/** One gauge's value in a scrape's text (NaN when absent). */
export const gauge = (body: string, name: string) =>
  Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, "m").exec(body)?.[1] ?? NaN)
