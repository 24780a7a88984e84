/** The operator's composer: text and files (picked or dropped), sent as the operator over the public API. */
import { useSignal } from "@preact/signals"
import { useRef } from "preact/hooks"
import { api } from "./api.js"
import { bytes } from "./format.js"
import { fail } from "./state.js"

const MAX_FILES = 10
const MAX_BYTES = 25 * 1024 * 1024

export const Composer = ({ conversationId, onSent }: { conversationId: number; onSent: () => void }) => {
  const text = useSignal("")
  const files = useSignal<ReadonlyArray<File>>([])
  const sending = useSignal(false)
  const dragging = useSignal(false)
  const picker = useRef<HTMLInputElement>(null)

  const add = (list: FileList | null) => {
    if (list === null) return
    const next = [...files.value, ...Array.from(list)]
    const tooBig = next.find((f) => f.size > MAX_BYTES)
    if (tooBig !== undefined) return fail(`${tooBig.name} is over 25 MB.`)
    if (next.length > MAX_FILES) return fail("At most 10 files per message.")
    files.value = next
  }

  const send = async () => {
    const message = text.value.trim()
    if ((message === "" && files.value.length === 0) || sending.value) return
    sending.value = true
    try {
      if (files.value.length === 0) {
        await api("POST", `${conversationId}/messages`, { json: { message } })
      } else {
        const form = new FormData()
        if (message !== "") form.set("message", message)
        for (const f of files.value) form.append("files[]", f, f.name)
        await api("POST", `${conversationId}/messages`, { form })
      }
      text.value = ""
      files.value = []
      onSent()
    } catch (e) {
      fail(e)
    } finally {
      sending.value = false
    }
  }

  return (
    <form
      class="composer"
      data-dragging={dragging.value}
      aria-label="Reply as operator"
      onSubmit={(e) => (e.preventDefault(), void send())}
      onDragOver={(e) => (e.preventDefault(), (dragging.value = true))}
      onDragLeave={() => (dragging.value = false)}
      onDrop={(e) => {
        e.preventDefault()
        dragging.value = false
        add(e.dataTransfer?.files ?? null)
      }}
    >
      <label for="composer-text" class="visually-hidden">Message to the contact</label>
      <textarea
        id="composer-text"
        rows={2}
        maxLength={10000}
        placeholder="Write to the contact (Enter sends, Shift+Enter for a new line); drop files here"
        value={text.value}
        onInput={(e) => (text.value = e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault()
            void send()
          }
        }}
      />
      {files.value.length > 0 && (
        <ul class="attachments" aria-label="Files to send">
          {files.value.map((f, i) => (
            <li key={`${f.name}-${i}`}>
              {f.name} <span class="size">{bytes(f.size)}</span>
              <button
                type="button"
                class="link"
                aria-label={`Remove ${f.name}`}
                onClick={() => (files.value = files.value.filter((_, j) => j !== i))}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="composer-actions">
        <input
          ref={picker}
          id="composer-files"
          type="file"
          multiple
          class="visually-hidden"
          aria-label="Files to attach"
          tabIndex={-1}
          onChange={(e) => (add(e.currentTarget.files), (e.currentTarget.value = ""))}
        />
        <button type="button" onClick={() => picker.current?.click()}>Attach files</button>
        <button type="submit" class="primary" disabled={sending.value}>{sending.value ? "Sending…" : "Send"}</button>
      </div>
    </form>
  )
}
