/**
 * The opportunity beside a conversation: stage, status, tags and context, and the contact with its
 * `custom_` overrides. Stage, status and tags change inline through `PUT /api/user/opportunities/{id}`
 * (a stage change runs the stage's automations as any API update does).
 */
import { useSignal } from "@preact/signals"
import { useEffect } from "preact/hooks"
import { api, type OpportunityRecord, type StageRecord } from "./api.js"
import { fail, say } from "./state.js"

const Field = ({ label, value, custom }: { label: string; value: string | null; custom?: string | null }) => (
  <>
    <dt>{label}</dt>
    <dd>
      {custom !== undefined && custom !== null
        ? (
          <>
            {custom} <span class="hint">(set here; contact says {value ?? "nothing"})</span>
          </>
        )
        : (value ?? "—")}
    </dd>
  </>
)

export const OpportunityPanel = ({ opportunityId, onChange }: { opportunityId: number; onChange: () => void }) => {
  const o = useSignal<OpportunityRecord | undefined>(undefined)
  const stages = useSignal<ReadonlyArray<StageRecord>>([])
  const tag = useSignal("")

  const load = async () => {
    const next = await api<OpportunityRecord>("GET", `opportunities/${opportunityId}`)
    o.value = next
    stages.value = await api<ReadonlyArray<StageRecord>>("GET", `pipelines/${next.pipeline_id}/stages`)
  }
  useEffect(() => void load().catch(fail), [opportunityId])

  const update = async (body: Record<string, unknown>, done: string) => {
    try {
      o.value = await api<OpportunityRecord>("PUT", `opportunities/${opportunityId}`, { json: body })
      say(done)
      onChange()
    } catch (e) {
      fail(e)
    }
  }

  const v = o.value
  if (v === undefined) return <aside class="panel" aria-busy="true" aria-label="Opportunity">Loading…</aside>
  return (
    <aside class="panel" aria-labelledby="opportunity-title">
      <h2 id="opportunity-title">{v.name ?? `Opportunity ${v.id}`}</h2>
      <label for="opp-stage">Stage</label>
      <select
        id="opp-stage"
        value={v.stage_id}
        data-nature={v.stage_nature}
        onChange={(e) => void update({ stage_id: Number(e.currentTarget.value) }, "Stage changed")}
      >
        {stages.value.map((s) => (
          <option key={s.id} value={s.id}>{s.name}{s.nature === "neutral" ? "" : ` (${s.nature})`}</option>
        ))}
      </select>
      <label for="opp-status">Status</label>
      <select
        id="opp-status"
        value={v.status}
        onChange={(e) => void update({ status: e.currentTarget.value }, "Status changed")}
      >
        {v.status === "pending" && <option value="pending" disabled>pending</option>}
        <option value="active">active</option>
        <option value="won">won</option>
        <option value="lost">lost</option>
      </select>
      <h3>Tags</h3>
      <ul class="tags" aria-label="Tags">
        {v.tags.map((t) => (
          <li key={t.id}>
            {t.name}
            <button
              type="button"
              class="link"
              aria-label={`Remove tag ${t.name}`}
              onClick={() => void update({ deleted_tags: [t.id] }, "Tag removed")}
            >
              ×
            </button>
          </li>
        ))}
      </ul>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault()
          const name = tag.value.trim()
          if (name === "") return
          tag.value = ""
          void update({ tags: [name] }, "Tag added")
        }}
      >
        <label for="opp-tag" class="visually-hidden">New tag</label>
        <input
          id="opp-tag"
          type="text"
          placeholder="Add a tag"
          maxLength={100}
          value={tag.value}
          onInput={(e) => (tag.value = e.currentTarget.value)}
        />
        <button type="submit">Add</button>
      </form>
      <h3>Contact</h3>
      <dl>
        <Field label="Name" value={v.contact_name} custom={v.contact_custom_name} />
        <Field label="Email" value={v.contact_email} custom={v.contact_custom_email} />
        <Field label="Phone" value={v.contact_phone} custom={v.contact_custom_phone} />
        <Field label="Identifier" value={v.contact_identifier} />
        <Field label="Priority" value={v.contact_priority} />
      </dl>
      <h3>Context</h3>
      {v.context === null || Object.keys(v.context).length === 0
        ? <p class="hint">Nothing collected yet.</p>
        : (
          <dl>
            {Object.entries(v.context).map(([k, val]) => (
              <Field key={k} label={k} value={typeof val === "string" ? val : JSON.stringify(val)} />
            ))}
          </dl>
        )}
    </aside>
  )
}
