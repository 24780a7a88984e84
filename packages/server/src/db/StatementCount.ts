/**
 * SQL statements sent to the database by this process (`parley_db_statements_total`): every statement
 * through the embedded client and every query on a pooled Postgres connection, transaction control
 * included. Counted with a plain number on the hot path and added to the counter at each scrape.
 */
import { Effect, Metric } from "effect"

export const statementsTotal = Metric.counter("parley_db_statements_total", {
  description: "SQL statements sent to the database (BEGIN and COMMIT included)",
  incremental: true
})

let sent = 0
let reported = 0

export const countStatement = () => {
  sent++
}

/** Brings the counter up to date (called by the metrics scrape). */
export const statementGauge = Effect.suspend(() => {
  const delta = sent - reported
  reported = sent
  return delta === 0 ? Effect.void : Metric.incrementBy(statementsTotal, delta)
})
