/**
 * Analytics: charts of the daily time series (`GET /api/user/analytics/timeseries`) and the handoff totals
 * (`GET /api/user/analytics/handoffs`) for a date range and pipeline of the chosen workspace.
 */
import { useSignal } from "@preact/signals"
import { useEffect } from "preact/hooks"
import { api, type Handoffs, type Series } from "./api.js"
import { Chart } from "./Chart.js"
import { duration, isoDay, money } from "./format.js"
import { fail, workspaceId, workspacePipelines } from "./state.js"

export const Analytics = () => {
  const end = useSignal(isoDay(new Date()))
  const start = useSignal(isoDay(new Date(Date.now() - 13 * 86_400_000)))
  const pipelineId = useSignal<number | undefined>(undefined)
  const series = useSignal<Series | undefined>(undefined)
  const handoffs = useSignal<Handoffs | undefined>(undefined)

  useEffect(() => {
    const query = {
      start_date: start.value,
      end_date: end.value,
      pipeline_id: pipelineId.value,
      workspace_id: workspaceId.value
    }
    Promise.all([
      api<Series>("GET", "analytics/timeseries", { query }),
      api<Handoffs>("GET", "analytics/handoffs", { query })
    ]).then(([s, h]) => {
      series.value = s
      handoffs.value = h
    }, fail)
  }, [start.value, end.value, pipelineId.value, workspaceId.value])

  const s = series.value?.series ?? []
  const days = s.map((d) => d.date)
  // one stacked series per won or lost stage entered in the range, won stages in greens, lost in reds
  const closedStages = new Map<number, { name: string; nature: "won" | "lost" }>()
  for (const d of s) {
    for (const e of d.closed_by_stage) closedStages.set(e.stage_id, { name: e.stage_name, nature: e.nature })
  }
  const shades = { won: ["green", "teal"], lost: ["red", "rose"] } as const
  const seen = { won: 0, lost: 0 }
  const byStage = [...closedStages.entries()].sort(([a], [b]) => a - b).map(([id, stage]) => ({
    name: `${stage.name} (${stage.nature})`,
    color: shades[stage.nature][seen[stage.nature]++ % 2]!,
    values: s.map((d) => d.closed_by_stage.find((e) => e.stage_id === id)?.count ?? 0)
  }))
  const totals = handoffs.value?.totals
  return (
    <section class="analytics" aria-labelledby="analytics-title">
      <header class="page-head">
        <h2 id="analytics-title">Analytics</h2>
        <form class="filters" onSubmit={(e) => e.preventDefault()}>
          <label>
            From{" "}
            <input
              type="date"
              value={start.value}
              max={end.value}
              onChange={(e) => e.currentTarget.value !== "" && (start.value = e.currentTarget.value)}
            />
          </label>
          <label>
            To{" "}
            <input
              type="date"
              value={end.value}
              min={start.value}
              onChange={(e) => e.currentTarget.value !== "" && (end.value = e.currentTarget.value)}
            />
          </label>
          <label>
            Pipeline{" "}
            <select
              value={pipelineId.value ?? ""}
              onChange={(
                e
              ) => (pipelineId.value = e.currentTarget.value === "" ? undefined : Number(e.currentTarget.value))}
            >
              <option value="">All pipelines</option>
              {workspacePipelines.value.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
            </select>
          </label>
        </form>
      </header>
      {totals !== undefined && (
        <dl class="kpis">
          <div>
            <dt>Handoffs requested</dt>
            <dd>{totals.requested}</dd>
          </div>
          <div>
            <dt>Taken</dt>
            <dd>{totals.taken}</dd>
          </div>
          <div>
            <dt>Median time to take</dt>
            <dd>{totals.median_take_seconds === null ? "—" : duration(totals.median_take_seconds)}</dd>
          </div>
          <div>
            <dt>AI cost</dt>
            <dd>{money(s.reduce((a, d) => a + d.ai_cost, 0))}</dd>
          </div>
        </dl>
      )}
      <div class="charts">
        <Chart
          title="Messages per day"
          kind="bar"
          days={days}
          series={[
            { name: "Contact", color: "blue", values: s.map((d) => d.contact_messages) },
            { name: "AI", color: "violet", values: s.map((d) => d.ai_messages) },
            { name: "Operator", color: "amber", values: s.map((d) => d.operator_messages) }
          ]}
        />
        <Chart
          title="AI cost per day"
          kind="bar"
          unit=" $"
          days={days}
          series={[{ name: "AI cost (USD)", color: "violet", values: s.map((d) => d.ai_cost) }]}
        />
        <Chart
          title="Median AI response time"
          kind="line"
          unit=" s"
          days={days}
          series={[{ name: "Seconds", color: "blue", values: s.map((d) => d.median_ai_response_seconds) }]}
        />
        <Chart
          title="Handoffs requested per day"
          kind="bar"
          days={days}
          series={[{ name: "Requested", color: "amber", values: s.map((d) => d.handoffs_requested) }]}
        />
        <Chart
          title="Median time to take a handoff"
          kind="line"
          unit=" s"
          days={days}
          series={[{ name: "Seconds", color: "amber", values: s.map((d) => d.median_take_seconds) }]}
        />
        <Chart
          title="Opportunities won and lost by stage per day"
          kind="bar"
          days={days}
          series={byStage.length > 0
            ? byStage
            : [{ name: "Won", color: "green", values: s.map((d) => d.won) }, {
              name: "Lost",
              color: "red",
              values: s.map((d) => d.lost)
            }]}
        />
      </div>
    </section>
  )
}
