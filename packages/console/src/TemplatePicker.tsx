/**
 * The composer once the provider's window has closed (WhatsApp: 24 hours after the contact's last message): only an
 * approved template may be sent until the contact writes again. The channel's approved templates, one input per body
 * parameter, the text the contact will read, sent as the operator.
 */
import { templateText } from "@parley/domain/TemplateText"
import { useSignal } from "@preact/signals"
import { useEffect } from "preact/hooks"
import { api, ApiError, type Template } from "./api.js"
import { say } from "./state.js"

type Problem = { readonly field: string; readonly message: string }

/** The body as the contact will read it (as the server stores it): each `{{n}}` kept while its input is empty. */
const preview = (template: Template, parameters: ReadonlyArray<string>) =>
  templateText(
    { name: template.name, parameters: parameters.map((p, i) => p === "" ? `{{${i + 1}}}` : p) },
    template.body
  )

const keyOf = (t: Template) => `${t.name}/${t.language}`

export const TemplatePicker = (
  { channelId, conversationId, onSent }: { channelId: number; conversationId: number; onSent: () => void }
) => {
  const templates = useSignal<ReadonlyArray<Template> | undefined>(undefined)
  const chosenKey = useSignal("")
  const parameters = useSignal<ReadonlyArray<string>>([])
  const sending = useSignal(false)
  const error = useSignal<string | undefined>(undefined)
  const problems = useSignal<ReadonlyArray<Problem>>([])

  useEffect(() => {
    templates.value = undefined
    error.value = undefined
    api<ReadonlyArray<Template>>("GET", `channels/${channelId}/templates`).then(
      (all) => (templates.value = all.filter((t) => t.status === "APPROVED")),
      (e) => (error.value = e instanceof Error ? e.message : String(e))
    )
  }, [channelId])

  const chosen = templates.value?.find((t) => keyOf(t) === chosenKey.value)
  const choose = (t: Template) => {
    chosenKey.value = keyOf(t)
    parameters.value = Array.from({ length: t.parameters }, () => "")
    problems.value = []
    error.value = undefined
  }

  const send = async () => {
    if (chosen === undefined || sending.value) return
    sending.value = true
    problems.value = []
    error.value = undefined
    try {
      await api("POST", `${conversationId}/messages`, {
        json: { template: { name: chosen.name, language: chosen.language, parameters: parameters.value } }
      })
      chosenKey.value = ""
      parameters.value = []
      say("Template sent")
      onSent()
    } catch (e) {
      if (e instanceof ApiError && e.validation.length > 0) problems.value = e.validation
      else error.value = e instanceof Error ? e.message : String(e)
    } finally {
      sending.value = false
    }
  }

  return (
    <form class="composer templates" aria-label="Send a template" onSubmit={(e) => (e.preventDefault(), void send())}>
      <p class="hint">
        The window has closed: until the contact writes again, only a template the provider approved can be sent.
      </p>
      {templates.value === undefined
        ? error.value === undefined && <p class="hint">Loading the channel's templates…</p>
        : templates.value.length === 0
        ? <p class="hint">This channel has no approved template.</p>
        : (
          <fieldset class="template-list">
            <legend>Template</legend>
            {templates.value.map((t, i) => (
              <div class="template-option" key={keyOf(t)}>
                <input
                  type="radio"
                  name="template"
                  id={`template-${i}`}
                  aria-describedby={`template-${i}-body`}
                  checked={keyOf(t) === chosenKey.value}
                  onChange={() => choose(t)}
                />
                <label for={`template-${i}`}>{t.name} ({t.language})</label>
                <span id={`template-${i}-body`} class="template-body">{t.body ?? "(no text)"}</span>
              </div>
            ))}
          </fieldset>
        )}
      {chosen !== undefined && (
        <>
          {parameters.value.length > 0 && (
            <div class="template-parameters">
              {parameters.value.map((value, i) => (
                <label key={i}>
                  Parameter {i + 1}
                  <input
                    value={value}
                    maxLength={1024}
                    onInput={(e) => {
                      const text = e.currentTarget.value
                      parameters.value = parameters.value.map((p, j) => j === i ? text : p)
                    }}
                  />
                </label>
              ))}
              <p class="hint">
                Write <code>{"{{variable}}"}</code> to put in the pipeline variable of that name.
              </p>
            </div>
          )}
          <figure class="template-preview">
            <figcaption class="hint">What the contact will read</figcaption>
            <p aria-live="polite">{preview(chosen, parameters.value)}</p>
          </figure>
        </>
      )}
      {problems.value.length > 0 && (
        <ul class="problems error" role="alert">
          {problems.value.map((p) => <li key={p.field}>{p.field}: {p.message}</li>)}
        </ul>
      )}
      {error.value !== undefined && <p class="error" role="alert">{error.value}</p>}
      <div class="composer-actions">
        <button
          type="submit"
          class="primary"
          disabled={chosen === undefined || sending.value || parameters.value.some((p) =>
            p.trim() === ""
          )}
        >
          {sending.value ? "Sending…" : "Send template"}
        </button>
      </div>
    </form>
  )
}
