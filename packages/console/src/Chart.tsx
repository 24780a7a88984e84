/** Small SVG charts (stacked bars, lines) for daily series: no library, drawn from the numbers as given. */

export interface Series {
  readonly name: string
  readonly color: string
  readonly values: ReadonlyArray<number | null>
}

const W = 640
const H = 220
const PAD = { left: 48, right: 12, top: 12, bottom: 28 }

const niceMax = (max: number) => {
  if (max <= 0) return 1
  const step = 10 ** Math.floor(Math.log10(max))
  return Math.ceil(max / step) * step
}

export const Chart = (
  { title, kind, days, series, unit = "" }: {
    title: string
    kind: "bar" | "line"
    days: ReadonlyArray<string>
    series: ReadonlyArray<Series>
    unit?: string
  }
) => {
  const n = days.length
  const totals = days.map((_, i) =>
    kind === "bar"
      ? series.reduce((s, x) => s + (x.values[i] ?? 0), 0)
      : Math.max(0, ...series.map((x) => x.values[i] ?? 0))
  )
  const max = niceMax(Math.max(0, ...totals))
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const x = (i: number) => PAD.left + (n <= 1 ? plotW / 2 : (i * plotW) / (n - 1))
  const band = plotW / Math.max(1, n)
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH
  const fmt = (v: number) => `${Number.isInteger(v) ? v : Number(v.toPrecision(v < 1 ? 2 : 3))}${unit}`
  const sums = series.map((s) => s.values.reduce<number>((a, v) => a + (v ?? 0), 0))
  const label = `${title}: ${
    series.map((s, i) =>
      kind === "bar"
        ? `${s.name} ${fmt(sums[i]!)} in total`
        : `${s.name} up to ${fmt(Math.max(0, ...s.values.map((v) => v ?? 0)))}`
    ).join(", ")
  }, from ${days[0] ?? ""} to ${days[n - 1] ?? ""}`

  return (
    <figure class="chart" data-empty={totals.every((t) => t === 0)}>
      <figcaption>
        <strong>{title}</strong>
        <span class="legend">
          {series.map((s) => (
            <span key={s.name}>
              <i class="swatch" data-color={s.color} />
              {s.name}
            </span>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label}>
        <line class="axis" x1={PAD.left} y1={PAD.top + plotH} x2={W - PAD.right} y2={PAD.top + plotH} />
        <line class="grid" x1={PAD.left} y1={PAD.top} x2={W - PAD.right} y2={PAD.top} />
        <text class="tick" x={PAD.left - 6} y={PAD.top + 4} text-anchor="end">{fmt(max)}</text>
        <text class="tick" x={PAD.left - 6} y={PAD.top + plotH + 4} text-anchor="end">0</text>
        <text class="tick" x={PAD.left} y={H - 6}>{days[0]}</text>
        <text class="tick" x={W - PAD.right} y={H - 6} text-anchor="end">{days[n - 1]}</text>
        {kind === "bar"
          ? days.map((day, i) => {
            let base = 0
            return series.map((s) => {
              const v = s.values[i] ?? 0
              if (v === 0) return null
              const top = y(base + v)
              const rect = (
                <rect
                  key={`${day}-${s.name}`}
                  class={`fill-${s.color}`}
                  x={PAD.left + i * band + band * 0.15}
                  width={band * 0.7}
                  y={top}
                  height={y(base) - top}
                >
                  <title>{`${day} ${s.name}: ${fmt(v)}`}</title>
                </rect>
              )
              base += v
              return rect
            })
          })
          : series.map((s) => {
            const points = s.values.map((v, i) => (v === null ? null : `${x(i)},${y(v)}`))
            const segments: Array<string> = []
            let current: Array<string> = []
            for (const p of points) {
              if (p === null) {
                if (current.length > 0) segments.push(current.join(" "))
                current = []
              } else current.push(p)
            }
            if (current.length > 0) segments.push(current.join(" "))
            return (
              <g key={s.name} class={`stroke-${s.color}`}>
                {segments.map((seg, i) => <polyline key={i} points={seg} />)}
                {s.values.map((v, i) =>
                  v === null ? null : (
                    <circle key={i} cx={x(i)} cy={y(v)} r={3}>
                      <title>{`${days[i]} ${s.name}: ${fmt(v)}`}</title>
                    </circle>
                  )
                )}
              </g>
            )
          })}
      </svg>
    </figure>
  )
}
