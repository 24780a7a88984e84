/**
 * Value parsing shared by both database paths, so rows look the same from PGlite and from node-pg:
 * int8 (when exact) and numeric as numbers (ids, counts, money all fit a double), timestamptz as ISO 8601 UTC with
 * six fractional digits (`2026-11-21T10:00:00.123456Z`), whatever the session time zone.
 */
import pg from "pg"

export const OID = { int8: 20, numeric: 1700, timestamptz: 1184, timestamp: 1114 } as const

const pgTimestamp =
  /^(\d{4,})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?)?$/

const pad = (n: number, width = 2) => String(n).padStart(width, "0")

export const pgTimestampToIso = (text: string): string => {
  const m = pgTimestamp.exec(text)
  if (m === null) return text
  const [, y, mo, d, h, mi, s, frac = "", sign, oh = "0", om = "0", os = "0"] = m
  const offsetSeconds = sign === undefined
    ? 0
    : (sign === "-" ? -1 : 1) * (Number(oh) * 3600 + Number(om) * 60 + Number(os))
  const utc = new Date(
    Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) - offsetSeconds * 1000
  )
  return `${utc.getUTCFullYear()}-${pad(utc.getUTCMonth() + 1)}-${pad(utc.getUTCDate())}T${pad(utc.getUTCHours())}:${
    pad(utc.getUTCMinutes())
  }:${pad(utc.getUTCSeconds())}.${frac.padEnd(6, "0")}Z`
}

/**
 * Our ids and counts fit a double; 64-bit values that do not (the cluster's snowflake ids) stay the exact
 * strings node-pg would give, because rounding them would silently break equality.
 */
const int8 = (text: string) => {
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : text
}

export const parsers: Record<number, (text: string) => unknown> = {
  [OID.int8]: int8,
  [OID.numeric]: Number,
  [OID.timestamptz]: pgTimestampToIso,
  [OID.timestamp]: pgTimestampToIso
}

/** For node-pg (`PgClient.layer({ types })`): our parsers, node-pg's defaults for everything else. */
export const pgTypeParser =
  ((oid: number, format?: "text" | "binary") =>
    parsers[oid] ?? (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format)) as never
