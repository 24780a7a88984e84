/**
 * The board: a pipeline's stages as columns (neutral, won and lost told apart) with their opportunities as
 * cards. Dragging a card onto a column (or choosing the column in the card's menu, for keyboards) moves the
 * opportunity with `PUT /api/user/opportunities/{id}`, which runs the stage's automations.
 */
import { useSignal } from "@preact/signals"
import { useEffect } from "preact/hooks"
import { api, type OpportunityPage, type OpportunityRecord, type StageRecord } from "./api.js"
import { money } from "./format.js"
import { fail, navigate, say, workspacePipelines } from "./state.js"

interface Column {
  readonly stage: StageRecord
  readonly cards: ReadonlyArray<OpportunityRecord>
  readonly total: number
}

const cost = (o: OpportunityRecord) => o.conversations.reduce((sum, c) => sum + c.cost_for_user, 0)

const Card = (
  { o, stages, move }: {
    o: OpportunityRecord
    stages: ReadonlyArray<StageRecord>
    move: (o: OpportunityRecord, stageId: number) => void
  }
) => (
  <li
    class="card"
    draggable
    data-id={o.id}
    aria-label={`${o.contact_custom_name ?? o.contact_name ?? o.name ?? `Opportunity ${o.id}`}`}
    onDragStart={(e) => {
      e.dataTransfer?.setData("text/plain", String(o.id))
      if (e.dataTransfer !== null) e.dataTransfer.effectAllowed = "move"
    }}
  >
    <strong>{o.contact_custom_name ?? o.contact_name ?? o.contact_identifier ?? `Contact ${o.contact_id}`}</strong>
    {o.name !== null && <span class="hint">{o.name}</span>}
    <span class="tags">{o.tags.map((t) => <span key={t.id} class="tag">{t.name}</span>)}</span>
    <span class="card-foot">
      {o.conversations[0] !== undefined && (
        <button
          type="button"
          class="link"
          onClick={() => navigate({ page: "inbox", conversationId: o.conversations[0]!.id })}
        >
          Open conversation
        </button>
      )}
      <label>
        <span class="visually-hidden">Move {o.contact_name ?? o.id} to</span>
        <select value={o.stage_id} onChange={(e) => move(o, Number(e.currentTarget.value))}>
          {stages.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
        </select>
      </label>
    </span>
  </li>
)

export const Board = () => {
  const pipelineId = useSignal<number | undefined>(undefined)
  const columns = useSignal<ReadonlyArray<Column>>([])
  const over = useSignal<number | undefined>(undefined)

  useEffect(() => {
    const first = workspacePipelines.value[0]
    if (pipelineId.value === undefined || !workspacePipelines.value.some((p) => p.id === pipelineId.value)) {
      pipelineId.value = first?.id
    }
  }, [workspacePipelines.value])

  const load = async () => {
    const id = pipelineId.value
    if (id === undefined) return
    const stages = (await api<ReadonlyArray<StageRecord>>("GET", `pipelines/${id}/stages`)).slice().sort((a, b) =>
      a.order - b.order
    )
    columns.value = await Promise.all(stages.map(async (stage) => {
      const page = await api<OpportunityPage>("GET", "opportunities", {
        query: { pipeline_id: id, stage_id: stage.id, per_page: 100 }
      })
      return { stage, cards: page.data, total: page.total }
    }))
  }
  useEffect(() => void load().catch(fail), [pipelineId.value])

  const move = async (o: OpportunityRecord, stageId: number) => {
    if (o.stage_id === stageId) return
    try {
      await api("PUT", `opportunities/${o.id}`, { json: { stage_id: stageId } })
      say(`Moved to ${columns.value.find((c) => c.stage.id === stageId)?.stage.name ?? "the stage"}`)
      await load()
    } catch (e) {
      fail(e)
    }
  }
  const stages = columns.value.map((c) => c.stage)

  return (
    <section class="board-page" aria-labelledby="board-title">
      <header class="page-head">
        <h2 id="board-title">Board</h2>
        <label>
          Pipeline{" "}
          <select value={pipelineId.value ?? ""} onChange={(e) => (pipelineId.value = Number(e.currentTarget.value))}>
            {workspacePipelines.value.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
      </header>
      <div class="board">
        {columns.value.map(({ stage, cards, total }) => (
          <section
            key={stage.id}
            class="column"
            data-nature={stage.nature}
            data-stage={stage.id}
            data-over={over.value === stage.id}
            aria-label={`${stage.name}: ${total} opportunities`}
            onDragOver={(e) => (e.preventDefault(), (over.value = stage.id))}
            onDragLeave={() => (over.value = undefined)}
            onDrop={(e) => {
              e.preventDefault()
              over.value = undefined
              const id = Number(e.dataTransfer?.getData("text/plain"))
              const card = columns.value.flatMap((c) => c.cards).find((c) => c.id === id)
              if (card !== undefined) void move(card, stage.id)
            }}
          >
            <header>
              <h3>{stage.name}</h3>
              <span class="nature">{stage.nature}</span>
              <p class="hint">
                <span class="total">{total}</span> · AI cost {money(cards.reduce((s, o) => s + cost(o), 0))}
              </p>
            </header>
            <ul>
              {cards.map((o) => <Card key={o.id} o={o} stages={stages} move={(card, s) => void move(card, s)} />)}
            </ul>
            {total > cards.length && <p class="hint">and {total - cards.length} more</p>}
          </section>
        ))}
      </div>
    </section>
  )
}
