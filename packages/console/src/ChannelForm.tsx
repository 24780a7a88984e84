/**
 * What the channel page's connect forms share (ConnectForms.tsx, ConnectEmail.tsx): the channel a form created (its
 * notice shows once), the problems of the last submission, the submit that posts a form's credentials, and the
 * pipeline choice.
 */
import { signal } from "@preact/signals"
import type { ComponentChildren } from "preact"
import { api, ApiError, type ChannelCreated, type ChannelRecord } from "./api.js"
import { channels, fail, workspaceId, workspacePipelines } from "./state.js"

export const created = signal<ChannelCreated | undefined>(undefined)
/** What the last connect form's submission got wrong, shown under that form. */
export const problems = signal<
  { readonly kind: string; readonly list: ReadonlyArray<{ field: string; message: string }> }
>({
  kind: "",
  list: []
})

export const Problems = ({ kind }: { kind: string }) =>
  problems.value.kind === kind && problems.value.list.length > 0
    ? (
      <ul class="problems" role="alert">
        {problems.value.list.map((p) => <li key={p.field}>{p.field}: {p.message}</li>)}
      </ul>
    )
    : null

export const reload = () => api<ReadonlyArray<ChannelRecord>>("GET", "channels").then((c) => (channels.value = c), fail)

export const field = (form: FormData, name: string) => {
  const value = String(form.get(name) ?? "").trim()
  return value === "" ? undefined : value
}

/** Connects a channel of `kind` from its form; `credentials` reads the form's provider fields. */
export const submit =
  (kind: string, fallbackName: string, credentials: (form: FormData) => Record<string, unknown>) => (e: Event) => {
    e.preventDefault()
    const form = new FormData(e.currentTarget as HTMLFormElement)
    const pipeline = field(form, "pipeline_id")
    problems.value = { kind: "", list: [] }
    api<ChannelCreated>("POST", "channels", {
      json: {
        workspace_id: workspaceId.value,
        kind,
        name: field(form, "name") ?? fallbackName,
        pipeline_id: pipeline === undefined ? null : Number(pipeline),
        credentials: credentials(form)
      }
    }).then(
      (channel) => {
        created.value = channel
        ;(e.target as HTMLFormElement).reset()
        void reload()
      },
      (error) => {
        if (error instanceof ApiError) problems.value = { kind, list: error.validation }
        fail(error)
      }
    )
  }

export const PipelineSelect = () => (
  <label>
    Pipeline
    <select name="pipeline_id">
      <option value="">None</option>
      {workspacePipelines.value.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
    </select>
  </label>
)

/** One input of a connect form: a secret is a password field the browser does not fill. */
export interface FieldSpec {
  readonly label: string
  readonly name: string
  readonly secret?: boolean
  readonly numeric?: boolean
  /** A text or email field the browser should not fill from its history. */
  readonly type?: "text" | "email"
  readonly placeholder?: string
}

const Input = ({ f }: { f: FieldSpec }) => {
  const attrs = {
    name: f.name,
    ...(f.numeric === true ? { inputMode: "numeric" as const } : {}),
    ...(f.placeholder === undefined ? {} : { placeholder: f.placeholder })
  }
  return (
    <label>
      {f.label} {f.secret === true
        ? <input {...attrs} type="password" autoComplete="off" />
        : f.type === "email"
        ? <input {...attrs} type="email" autoComplete="off" />
        : f.type === "text"
        ? <input {...attrs} type="text" autoComplete="off" />
        : <input {...attrs} />}
    </label>
  )
}

/**
 * A provider's connect form: its title and hint, the channel's name and pipeline, the simulator instead of the
 * provider, the provider's fields, and what the last submission got wrong.
 */
export const ConnectFrame = (p: {
  readonly kind: string
  readonly title: string
  readonly hint: ComponentChildren
  readonly name: string
  /** What the simulator stands in for ("Meta", "a mail server"). */
  readonly instead: string
  readonly onSubmit: (e: Event) => void
  readonly fields: ReadonlyArray<FieldSpec>
}) => (
  <form class="connect" onSubmit={p.onSubmit} aria-labelledby={`connect-${p.kind}-title`}>
    <h3 id={`connect-${p.kind}-title`}>{p.title}</h3>
    <p class="hint">{p.hint}</p>
    <label>
      Name <input name="name" placeholder={p.name} />
    </label>
    <PipelineSelect />
    <label class="inline">
      <input type="checkbox" name="simulator" /> Use the simulator instead of {p.instead}
    </label>
    {p.fields.map((f) => <Input key={f.name} f={f} />)}
    <Problems kind={p.kind} />
    <button type="submit">Connect</button>
  </form>
)
