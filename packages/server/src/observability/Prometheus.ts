/**
 * Effect's metrics (every `Metric` the process declared, with its tags) in the Prometheus text format,
 * version 0.0.4: counters, gauges, histograms (cumulative buckets, `_sum`, `_count`), frequencies as a
 * counter per value, summaries as quantiles.
 */
import { type MetricKey, type MetricPair, MetricState, Option } from "effect"

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")
const escapeHelp = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")
export const metricName = (name: string) => name.replace(/[^a-zA-Z0-9_:]/g, "_")

const labels = (key: MetricKey.MetricKey.Untyped, extra: Record<string, string> = {}) => {
  const all = [...key.tags.map((t) => [metricName(t.key), t.value] as const), ...Object.entries(extra)]
  return all.length === 0 ? "" : `{${all.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`
}

const num = (n: number | bigint) =>
  typeof n === "bigint" ? n.toString() : Number.isFinite(n) ? String(n) : n > 0 ? "+Inf" : n < 0 ? "-Inf" : "NaN"

const typeOf = (state: unknown) =>
  MetricState.isCounterState(state) || MetricState.isFrequencyState(state)
    ? "counter"
    : MetricState.isGaugeState(state)
    ? "gauge"
    : MetricState.isHistogramState(state)
    ? "histogram"
    : "summary"

const samples = (
  name: string,
  { metricKey: key, metricState: state }: MetricPair.MetricPair.Untyped
): Array<string> => {
  if (MetricState.isCounterState(state)) return [`${name}${labels(key)} ${num(state.count)}`]
  if (MetricState.isFrequencyState(state)) {
    return [...state.occurrences].map(([value, n]) => `${name}${labels(key, { value })} ${num(n)}`)
  }
  if (MetricState.isGaugeState(state)) return [`${name}${labels(key)} ${num(state.value)}`]
  if (MetricState.isHistogramState(state)) {
    return [
      ...state.buckets.map(([boundary, n]) => `${name}_bucket${labels(key, { le: num(boundary) })} ${num(n)}`),
      `${name}_bucket${labels(key, { le: "+Inf" })} ${num(state.count)}`,
      `${name}_sum${labels(key)} ${num(state.sum)}`,
      `${name}_count${labels(key)} ${num(state.count)}`
    ]
  }
  if (MetricState.isSummaryState(state)) {
    return [
      ...state.quantiles.flatMap(([q, value]) =>
        Option.isSome(value) ? [`${name}${labels(key, { quantile: String(q) })} ${num(value.value)}`] : []
      ),
      `${name}_sum${labels(key)} ${num(state.sum)}`,
      `${name}_count${labels(key)} ${num(state.count)}`
    ]
  }
  return []
}

/** One sample line per series, grouped by metric name with its HELP and TYPE. */
export const prometheusText = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const byName = new Map<string, Array<MetricPair.MetricPair.Untyped>>()
  for (const pair of pairs) {
    const name = metricName(pair.metricKey.name)
    byName.set(name, [...(byName.get(name) ?? []), pair])
  }
  const out: Array<string> = []
  for (const [name, series] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    const help = series.map((s) => s.metricKey.description).find(Option.isSome)
    if (help !== undefined) out.push(`# HELP ${name} ${escapeHelp(help.value)}`)
    out.push(`# TYPE ${name} ${typeOf(series[0]!.metricState)}`)
    for (const pair of series) out.push(...samples(name, pair))
  }
  return out.join("\n") + "\n"
}
