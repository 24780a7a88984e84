/**
 * A readable diff of two configuration snapshots (docs/versions.md): settings fields old → new; stages,
 * variables, actions and followups added, removed or changed (fields old → new); knowledge tables
 * attached or detached; and the same as text, one line a change.
 */
import type { FieldChange, SectionDiff } from "@parley/domain"
import { VersionDiff } from "@parley/domain"
import type { Config } from "./VersionsRepo.js"

type Row = Record<string, unknown>

/** Columns that say where a row is, not what it is: never reported as changes. */
const ignored = new Set(["id", "workspace_id", "pipeline_id", "created_at", "updated_at"])

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

const fieldChanges = (before: Row, after: Row): Array<FieldChange> =>
  [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((field) => !ignored.has(field) && !same(before[field], after[field]))
    .sort()
    .map((field) => ({ field, old: before[field] ?? null, new: after[field] ?? null }))

const rows = (
  config: Config,
  key: string
): Array<Row> => (Array.isArray(config[key]) ? (config[key] as Array<Row>) : [])

const sectionDiff = (before: Array<Row>, after: Array<Row>, name: (r: Row) => string): SectionDiff => {
  const byId = (list: Array<Row>) => new Map(list.map((r) => [Number(r.id), r]))
  const old = byId(before)
  const next = byId(after)
  const ref = (r: Row) => ({ id: Number(r.id), name: name(r) })
  return {
    added: after.filter((r) => !old.has(Number(r.id))).map(ref),
    removed: before.filter((r) => !next.has(Number(r.id))).map(ref),
    changed: after.flatMap((r) => {
      const was = old.get(Number(r.id))
      const fields = was === undefined ? [] : fieldChanges(was, r)
      return fields.length === 0 ? [] : [{ ...ref(r), fields }]
    })
  }
}

const show = (value: unknown) => {
  const text = JSON.stringify(value ?? null)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

const sectionText = (title: string, d: SectionDiff) => [
  ...d.added.map((r) => `+ ${title} "${r.name}" (${r.id})`),
  ...d.removed.map((r) => `- ${title} "${r.name}" (${r.id})`),
  ...d.changed.flatMap((r) =>
    r.fields.map((f) => `~ ${title} "${r.name}" ${f.field}: ${show(f.old)} -> ${show(f.new)}`)
  )
]

export const diffConfigs = (
  from: "draft" | number,
  to: "draft" | number,
  before: Config,
  after: Config
): VersionDiff => {
  const stageNames = new Map(
    [...rows(before, "stages"), ...rows(after, "stages")].map((s) => [Number(s.id), String(s.name)])
  )
  const followupName = (f: Row) => `followup of ${stageNames.get(Number(f.stage_id)) ?? `stage ${f.stage_id}`}`
  const settings = fieldChanges((before.pipeline ?? {}) as Row, (after.pipeline ?? {}) as Row)
  const stages = sectionDiff(rows(before, "stages"), rows(after, "stages"), (r) => String(r.name))
  const variables = sectionDiff(rows(before, "variables"), rows(after, "variables"), (r) => String(r.name))
  const actions = sectionDiff(rows(before, "actions"), rows(after, "actions"), (r) => String(r.name))
  const followups = sectionDiff(rows(before, "followups"), rows(after, "followups"), followupName)
  const tables = (c: Config) => rows(c, "knowledge_tables").map((k) => Number(k.knowledge_table_id))
  const knowledge_tables = {
    attached: tables(after).filter((id) => !tables(before).includes(id)),
    detached: tables(before).filter((id) => !tables(after).includes(id))
  }
  const lines = [
    ...settings.map((f) => `~ setting ${f.field}: ${show(f.old)} -> ${show(f.new)}`),
    ...sectionText("stage", stages),
    ...sectionText("variable", variables),
    ...sectionText("action", actions),
    ...sectionText("followup", followups),
    ...knowledge_tables.attached.map((id) => `+ knowledge table ${id}`),
    ...knowledge_tables.detached.map((id) => `- knowledge table ${id}`)
  ]
  const name = (v: "draft" | number) => (v === "draft" ? "draft" : `version ${v}`)
  const text = lines.length === 0
    ? `No changes from ${name(from)} to ${name(to)}.`
    : [`${name(from)} -> ${name(to)}:`, ...lines].join("\n")
  return new VersionDiff({ from, to, settings, stages, variables, actions, followups, knowledge_tables, text })
}
