/**
 * The models page (docs/agent.md, "Models and providers"): the providers this workspace may use (its own and the
 * server-wide ones), each with its models, their prices, context window and capabilities. Check a provider (what
 * its server answers, in one plain sentence when it fails), add a model from the list its server gave, delete
 * either (a pipeline still using one is named by the server's 409). The forms are in ModelForms.tsx.
 */
import { signal } from "@preact/signals"
import { useEffect } from "preact/hooks"
import { type AiModel, type AiProvider, type AiProviderCheck, api } from "./api.js"
import { AddModel, AddProvider, kindName } from "./ModelForms.js"
import { fail, me, say, workspaceId } from "./state.js"

const providers = signal<ReadonlyArray<AiProvider>>([])
const models = signal<ReadonlyArray<AiModel>>([])
const checks = signal<Readonly<Record<number, AiProviderCheck>>>({})
/** The provider whose "Add a model" form is open. */
const adding = signal<number | undefined>(undefined)

const load = () =>
  Promise.all([
    api<ReadonlyArray<AiProvider>>("GET", "ai-providers"),
    api<ReadonlyArray<AiModel>>("GET", "ai-models")
  ]).then(([p, m]) => {
    providers.value = p
    models.value = m
  }, fail)

const check = (p: AiProvider) =>
  api<AiProviderCheck>("POST", `ai-providers/${p.id}/check`, { json: {} }).then(
    (result) => (checks.value = { ...checks.value, [p.id]: result }),
    fail
  )

const remove = (what: "ai-providers" | "ai-models", id: number, name: string) =>
  api("DELETE", `${what}/${id}`).then(() => (say(`${name} deleted.`), load()), fail)

const price = (usd: number) => `$${usd.toFixed(usd !== 0 && usd < 0.01 ? 4 : 2)}`

/** What the check found, plainly: reachable or not, the models listed, the model's reply, the problem. */
const CheckResult = ({ result }: { result: AiProviderCheck }) => (
  <div class="check" data-ok={result.ok} role="status">
    <p>
      {result.reachable ? "Reachable" : "Not reachable"}
      {result.reachable && `: ${result.models.length} model${result.models.length === 1 ? "" : "s"} listed`}
      {result.models.length > 0 && ` (${result.models.slice(0, 8).join(", ")}${result.models.length > 8 ? ", …" : ""})`}
      .
    </p>
    {result.model !== null && result.reply !== null && <p>{result.model} answered: {result.reply}</p>}
    {result.tools === false && <p>{result.model ?? "The model"} does not take tools.</p>}
    {result.problem !== null && <p class="problem">{result.problem}</p>}
  </div>
)

/** `changeable`: the operator may delete its models (a server-wide provider's are a super user's). */
const ModelTable = ({ list, changeable }: { list: ReadonlyArray<AiModel>; changeable: boolean }) =>
  list.length === 0 ? <p class="empty">No models yet.</p> : (
    <div class="table-wrap">
      <table class="models">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Model</th>
            <th scope="col">Input / output per 1M tokens</th>
            <th scope="col">Context window</th>
            <th scope="col">Capabilities</th>
            {changeable && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {list.map((m) => (
            <tr key={m.id} data-id={m.id}>
              <td>{m.name}</td>
              <td>
                <code>{m.model}</code>
              </td>
              <td>{price(m.input_price)} / {price(m.output_price)}</td>
              <td>{m.context_window.toLocaleString("en")}</td>
              <td>{m.capabilities.length === 0 ? "—" : m.capabilities.join(", ")}</td>
              {changeable && (
                <td>
                  <button
                    type="button"
                    class="link"
                    aria-label={`Delete model ${m.name}`}
                    onClick={() => void remove("ai-models", m.id, m.name)}
                  >
                    Delete
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )

const Provider = ({ p }: { p: AiProvider }) => {
  const result = checks.value[p.id]
  const own = models.value.filter((m) => m.ai_provider_id === p.id)
  const changeable = p.kind !== "local" && (!p.server_wide || me.value?.user.is_super_user === true)
  return (
    <li class="provider-row" data-kind={p.kind} data-id={p.id}>
      <div class="channel-head">
        <strong>{p.name}</strong>
        <span class="kind">{kindName(p.kind)}</span>
        <span class="scope">{p.server_wide ? "Server-wide" : "This workspace"}</span>
      </div>
      {p.kind === "local" ?
        <p class="hint">Runs inside Parley: no server and no key.</p> :
        (
          <dl class="provider-facts">
            <dt>Base URL</dt>
            <dd>{p.base_url ?? "the provider's own"}</dd>
            <dt>API key</dt>
            <dd>{p.has_key ? "yes" : "no"}</dd>
            {p.header_names.length > 0 && (
              <>
                <dt>Headers</dt>
                <dd>{p.header_names.join(", ")}</dd>
              </>
            )}
            {p.timeout_ms !== null && (
              <>
                <dt>Timeout</dt>
                <dd>{p.timeout_ms / 1000} s</dd>
              </>
            )}
          </dl>
        )}
      <ModelTable list={own} changeable={changeable} />
      <div class="channel-actions">
        {p.kind !== "local" && <button type="button" onClick={() => void check(p)}>Check</button>}
        {changeable && (
          <button type="button" onClick={() => (adding.value = adding.value === p.id ? undefined : p.id)}>
            Add a model
          </button>
        )}
        {changeable && !p.is_seeded && (
          <button
            type="button"
            aria-label={`Delete provider ${p.name}`}
            onClick={() => void remove("ai-providers", p.id, p.name)}
          >
            Delete
          </button>
        )}
      </div>
      {result !== undefined && <CheckResult result={result} />}
      {adding.value === p.id && (
        <AddModel
          provider={p}
          suggestions={result?.models ?? []}
          onAdded={() => void load()}
        />
      )}
    </li>
  )
}

export const Models = () => {
  useEffect(() => void load(), [])
  // the workspace's own first: those are the ones an operator adds, checks and changes
  const shown = [
    ...providers.value.filter((p) => !p.server_wide && p.workspace_id === workspaceId.value),
    ...providers.value.filter((p) => p.server_wide)
  ]
  return (
    <section class="channels-page models-page" aria-labelledby="models-title">
      <h2 id="models-title">Models</h2>
      <p class="hint">
        The model providers this workspace's pipelines may use, and their models. Prices are in USD per million tokens.
      </p>
      <ul class="channel-list" aria-label="Providers">
        {shown.map((p) => <Provider key={p.id} p={p} />)}
        {shown.length === 0 && <li class="empty">No providers yet.</li>}
      </ul>
      <AddProvider
        onAdded={(p) => {
          adding.value = p.id
          void load()
        }}
      />
    </section>
  )
}
