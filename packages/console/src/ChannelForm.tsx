/**
 * What the channel page's connect forms share (ConnectForms.tsx, ConnectEmail.tsx): the channel a form created (its
 * notice shows once), the problems of the last submission, the submit that posts a form's credentials, and the
 * pipeline choice.
 */
import { signal } from "@preact/signals"
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
