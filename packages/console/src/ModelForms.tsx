/**
 * The models page's forms (Models.tsx): add a model provider, add a model to one. Fields are data, as the channel
 * forms' are (ChannelForm.tsx); a 422's messages show at the fields they name, so the operator sees which of the URL
 * or the key the provider's server refused.
 */
import { signal } from "@preact/signals"
import { type AiModel, type AiProvider, api, ApiError } from "./api.js"
import { field } from "./ChannelForm.js"
import { fail, me, say, workspaceId } from "./state.js"

type Problem = { readonly field: string; readonly message: string }

/** What the last submission of each form got wrong, by form (`provider`, `model-<provider id>`). */
const problems = signal<Readonly<Record<string, ReadonlyArray<Problem>>>>({})

/** One input of a form; `list` names a datalist of suggestions. */
export interface ModelFieldSpec {
  readonly label: string
  readonly name: string
  readonly secret?: boolean
  readonly numeric?: boolean
  readonly placeholder?: string
  readonly list?: string
  readonly hint?: string
}

const problemsOf = (form: string, name: string) =>
  (problems.value[form] ?? []).filter((p) => p.field === name || p.field.startsWith(`${name}.`))

/**
 * An input with its hint and its field's problems under it, outside the label (the input's name stays its label) and
 * named by `aria-describedby`, so a screen reader says them with the field.
 */
const Input = ({ form, f }: { form: string; f: ModelFieldSpec }) => {
  const own = problemsOf(form, f.name)
  const id = `${form}-${f.name}`
  const described = [
    ...(f.hint === undefined ? [] : [`${id}-hint`]),
    ...(own.length > 0 ? [`${id}-problem`] : [])
  ]
  const attrs = {
    id,
    name: f.name,
    autoComplete: "off",
    ...(f.numeric === true ? { inputMode: "decimal" as const } : {}),
    ...(f.placeholder === undefined ? {} : { placeholder: f.placeholder }),
    ...(own.length > 0 ? { "aria-invalid": true } : {}),
    ...(described.length > 0 ? { "aria-describedby": described.join(" ") } : {})
  }
  return (
    <div class="field">
      <label for={id}>{f.label}</label>
      {f.secret === true
        ? <input {...attrs} type="password" />
        : f.list === undefined
        ? <input {...attrs} type="text" />
        : <input {...attrs} type="text" list={f.list} />}
      {f.hint !== undefined && <span class="hint" id={`${id}-hint`}>{f.hint}</span>}
      {own.length > 0 && <span class="field-problem" id={`${id}-problem`}>{own.map((p) => p.message).join(" ")}</span>}
    </div>
  )
}

/** The problems no field of the form names. */
const Rest = ({ form, names }: { form: string; names: ReadonlyArray<string> }) => {
  const rest = (problems.value[form] ?? []).filter((p) =>
    !names.some((n) => p.field === n || p.field.startsWith(`${n}.`))
  )
  return rest.length === 0 ? null : (
    <ul class="problems" role="alert">
      {rest.map((p) => <li key={p.field}>{p.field}: {p.message}</li>)}
    </ul>
  )
}

/** Posts a form; its 422 goes to the form's fields, any failure to the notice. */
function post<A>(form: string, path: string, json: unknown, done: (a: A) => void) {
  problems.value = { ...problems.value, [form]: [] }
  return api<A>("POST", path, { json }).then(done, (error) => {
    if (error instanceof ApiError) problems.value = { ...problems.value, [form]: error.validation }
    fail(error)
  })
}

/** A number field's number; what is not one goes as typed, so the server's 422 names the field. */
const numberOf = (form: FormData, name: string) => {
  const value = field(form, name)
  return value === undefined ? undefined : Number.isNaN(Number(value)) ? value : Number(value)
}

/** The kinds of provider, as an operator knows them, and where each one's server usually is. */
const KINDS = [
  {
    kind: "openai_compatible",
    label: "OpenAI-compatible (Ollama, vLLM, LM Studio, OpenRouter...)",
    url: "http://127.0.0.1:11434/v1",
    hint: "Ollama http://127.0.0.1:11434/v1, vLLM http://127.0.0.1:8000/v1, LM Studio http://127.0.0.1:1234/v1, " +
      "OpenRouter https://openrouter.ai/api/v1. A local server needs no key."
  },
  {
    kind: "openai",
    label: "OpenAI",
    url: "https://api.openai.com/v1",
    hint: "Leave the URL empty for OpenAI's own."
  },
  {
    kind: "anthropic",
    label: "Anthropic",
    url: "https://api.anthropic.com",
    hint: "Leave the URL empty for Anthropic's own."
  },
  {
    kind: "google",
    label: "Google Gemini",
    url: "https://generativelanguage.googleapis.com",
    hint: "Leave the URL empty for Google's own."
  }
] as const
type Kind = typeof KINDS[number]

export const kindName = (kind: string) =>
  kind === "local" ? "Built-in local model" : KINDS.find((k) => k.kind === kind)?.label.replace(/ \(.*$/, "") ?? kind

const chosenKind = signal<Kind>(KINDS[0])

const providerFields = (k: Kind): ReadonlyArray<ModelFieldSpec> => [
  { label: "Name", name: "name", placeholder: k.kind === "openai_compatible" ? "Ollama on the GPU box" : k.label },
  { label: "Base URL", name: "base_url", placeholder: k.url, hint: k.hint },
  {
    label: k.kind === "openai_compatible" ? "API key (optional)" : "API key",
    name: "api_key",
    secret: true
  },
  { label: "Timeout in milliseconds (optional)", name: "timeout_ms", numeric: true, placeholder: "60000" }
]

/** The form that adds a provider to the chosen workspace, or server-wide (super users only). */
export const AddProvider = ({ onAdded }: { onAdded: (p: AiProvider) => void }) => {
  const k = chosenKind.value
  const fields = providerFields(k)
  const superUser = me.value?.user.is_super_user === true
  const submit = (e: Event) => {
    e.preventDefault()
    const target = e.currentTarget as HTMLFormElement
    const form = new FormData(target)
    const serverWide = superUser && form.get("server_wide") === "on"
    void post<AiProvider>("provider", "ai-providers", {
      kind: k.kind,
      name: field(form, "name") ?? k.label.replace(/ \(.*$/, ""),
      ...(field(form, "base_url") === undefined ? {} : { base_url: field(form, "base_url") }),
      ...(field(form, "api_key") === undefined ? {} : { api_key: field(form, "api_key") }),
      ...(field(form, "timeout_ms") === undefined ? {} : { timeout_ms: numberOf(form, "timeout_ms") }),
      ...(serverWide ? { server_wide: true } : { workspace_id: workspaceId.value }),
      ...(superUser ? { charge_credits: form.get("charge_credits") === "on" } : {}),
      ...(form.get("skip_check") === "on" ? { skip_check: true } : {})
    }, (provider) => {
      say(`${provider.name} added.`)
      target.reset()
      chosenKind.value = KINDS[0]
      onAdded(provider)
    })
  }
  return (
    <form class="connect" onSubmit={submit} aria-labelledby="add-provider-title">
      <h3 id="add-provider-title">Add a model provider</h3>
      <p class="hint">
        Any server speaking OpenAI's, Anthropic's or Gemini's API. Parley asks it for its models before saving.
      </p>
      <div class="field">
        <label for="provider-kind">Kind</label>
        <select
          id="provider-kind"
          name="kind"
          value={k.kind}
          onChange={(e) => (chosenKind.value = KINDS.find((x) => x.kind === e.currentTarget.value) ?? KINDS[0])}
        >
          {KINDS.map((x) => <option key={x.kind} value={x.kind}>{x.label}</option>)}
        </select>
      </div>
      {fields.map((f) => <Input key={f.name} form="provider" f={f} />)}
      {superUser && (
        <>
          <label class="inline">
            <input type="checkbox" name="server_wide" /> Server-wide (every workspace may use it)
          </label>
          <label class="inline">
            <input type="checkbox" name="charge_credits" /> Replies through it spend the workspace's credits
          </label>
        </>
      )}
      <label class="inline">
        <input type="checkbox" name="skip_check" /> Save without asking the server (it is not running yet)
      </label>
      <Rest form="provider" names={[...fields.map((f) => f.name), "kind"]} />
      <button type="submit">Add provider</button>
    </form>
  )
}

const CAPABILITIES = [
  ["tools", "Tools (function calling)"],
  ["vision", "Vision (reads images)"],
  ["audio_input", "Audio input"],
  ["transcription", "Transcription"],
  ["embeddings", "Embeddings"]
] as const

const modelFields = (p: AiProvider): ReadonlyArray<ModelFieldSpec> => [
  { label: "Model", name: "model", list: `models-of-${p.id}`, placeholder: "llama3.1:8b" },
  { label: "Display name (optional)", name: "name" },
  { label: "Input price, USD per million tokens", name: "input_price", numeric: true, placeholder: "0" },
  { label: "Output price, USD per million tokens", name: "output_price", numeric: true, placeholder: "0" },
  { label: "Context window in tokens (optional)", name: "context_window", numeric: true, placeholder: "128000" }
]

/** The form that adds a model to `provider`; `suggestions` are the models its server listed on the last check. */
export const AddModel = (
  { provider, suggestions, onAdded }: {
    provider: AiProvider
    suggestions: ReadonlyArray<string>
    onAdded: (m: AiModel) => void
  }
) => {
  const form = `model-${provider.id}`
  const fields = modelFields(provider)
  const submit = (e: Event) => {
    e.preventDefault()
    const target = e.currentTarget as HTMLFormElement
    const data = new FormData(target)
    const model = field(data, "model") ?? ""
    void post<AiModel>(form, "ai-models", {
      ai_provider_id: provider.id,
      model,
      name: field(data, "name") ?? model,
      ...Object.fromEntries(
        ["input_price", "output_price", "context_window"].flatMap((name) => {
          const value = numberOf(data, name)
          return value === undefined ? [] : [[name, value]]
        })
      ),
      capabilities: data.getAll("capabilities").map(String)
    }, (created) => {
      say(`${created.name} added.`)
      target.reset()
      onAdded(created)
    })
  }
  return (
    <form class="connect add-model" onSubmit={submit} aria-labelledby={`${form}-title`}>
      <h4 id={`${form}-title`}>Add a model to {provider.name}</h4>
      <datalist id={`models-of-${provider.id}`}>
        {suggestions.map((m) => <option key={m} value={m} />)}
      </datalist>
      {fields.map((f) => <Input key={f.name} form={form} f={f} />)}
      <fieldset class="capabilities">
        <legend>What it can do</legend>
        {CAPABILITIES.map(([value, label]) => (
          <label key={value} class="inline">
            <input type="checkbox" name="capabilities" value={value} /> {label}
          </label>
        ))}
      </fieldset>
      <Rest form={form} names={[...fields.map((f) => f.name), "capabilities"]} />
      <button type="submit">Add model</button>
    </form>
  )
}
