/** Small formatting helpers for times, durations and names. */
import { KIND_LABEL } from "@parley/domain/KindLabels"
import { signal } from "@preact/signals"

/** Ticks every 15 s, so "waiting 3 min" counts on without a reload. */
export const now = signal(Date.now())
setInterval(() => (now.value = Date.now()), 15_000)

export const duration = (seconds: number) => {
  if (seconds < 60) return `${Math.max(0, Math.round(seconds))} s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`
  return `${Math.floor(seconds / 86_400)} d`
}

export const since = (
  iso: string | null,
  at = now.value
) => (iso === null ? "" : duration((at - Date.parse(iso)) / 1000))

export const clock = (iso: string) => {
  const d = new Date(iso)
  const today = new Date().toDateString() === d.toDateString()
  return today
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleDateString([], { month: "short", day: "numeric" })
}

export const money = (usd: number) => `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`

/** The name to show: the contact's, else email; a website visitor without either by the end of their widget id. */
export const contactName = (
  c: { readonly name: string | null; readonly identifier: string | null; readonly email: string | null }
) =>
  c.name ?? c.email ??
    (c.identifier?.startsWith("wg_") === true ? `Website visitor ${c.identifier.slice(-4)}` : c.identifier) ??
    "Unknown contact"

export const bytes = (
  n: number
) => (n < 1024 ? `${n} B` : n < 1_048_576 ? `${(n / 1024).toFixed(0)} KB` : `${(n / 1_048_576).toFixed(1)} MB`)

/** Days as `YYYY-MM-DD` in UTC (the analytics endpoints' calendar). */
export const isoDay = (d: Date) => d.toISOString().slice(0, 10)

/** A channel kind as operators name it. */
export const kindLabel = (kind: string) => KIND_LABEL[kind] ?? kind
