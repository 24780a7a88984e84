/**
 * The knowledge pages' forms (Knowledge.tsx, KnowledgeTable.tsx): a new document table; files dropped or picked, each
 * one a source of its own (multipart `file`, as `POST .../sources` takes it); a URL, sitemap or crawl. A refused
 * upload (413 over 50 MB, 422 for a table without the document columns) shows the server's message beside the file.
 */
import { signal, useSignal } from "@preact/signals"
import { useRef } from "preact/hooks"
import { api, ApiError, type KnowledgeSourceRecord, type KnowledgeTableRecord } from "./api.js"
import { field } from "./ChannelForm.js"
import { bytes } from "./format.js"
import { fail, say, workspaceId } from "./state.js"

/** A 422's field messages (each names its field) rather than its summary, so the operator reads what to change. */
const explain = (e: unknown) =>
  e instanceof ApiError && e.validation.length > 0
    ? e.validation.map((v) => v.message).join(" ")
    : e instanceof Error
    ? e.message
    : String(e)

export const NewTable = ({ onCreated }: { onCreated: (t: KnowledgeTableRecord) => void }) => {
  const problem = useSignal<string | undefined>(undefined)
  const submit = (e: Event) => {
    e.preventDefault()
    const target = e.currentTarget as HTMLFormElement
    const form = new FormData(target)
    problem.value = undefined
    api<KnowledgeTableRecord>("POST", "knowledge-tables", {
      json: {
        workspace_id: workspaceId.value,
        name: field(form, "name") ?? "",
        description: field(form, "description") ?? null
        // no columns: the server gives the table the document columns its sources need
      }
    }).then((t) => (say(`${t.name} created.`), target.reset(), onCreated(t)), (error) => {
      problem.value = explain(error)
      fail(error)
    })
  }
  return (
    <form class="connect" onSubmit={submit} aria-labelledby="new-table-title">
      <h3 id="new-table-title">New document table</h3>
      <p class="hint">With the columns files and web pages fill: text, title, section, source and page.</p>
      <label>
        Name <input type="text" name="name" required maxLength={255} />
      </label>
      <label>
        Description (optional) <input type="text" name="description" maxLength={5000} />
      </label>
      {problem.value !== undefined && <p class="error" role="alert">{problem.value}</p>}
      <button type="submit">Create table</button>
    </form>
  )
}

interface Upload {
  readonly key: number
  readonly name: string
  readonly size: number
  readonly error?: string
}
/** The files being sent and the refused ones, by the order they came; a sent file leaves the list. */
const uploads = signal<ReadonlyArray<Upload>>([])
let uploadKey = 0

const send = (tableId: number, file: File, onAdded: () => void) => {
  const key = ++uploadKey
  uploads.value = [...uploads.value, { key, name: file.name, size: file.size }]
  const form = new FormData()
  form.append("file", file, file.name)
  return api<KnowledgeSourceRecord>("POST", `knowledge-tables/${tableId}/sources`, { form }).then(
    () => {
      uploads.value = uploads.value.filter((u) => u.key !== key)
      onAdded()
    },
    (error) => {
      uploads.value = uploads.value.map((u) => (u.key === key ? { ...u, error: explain(error) } : u))
      fail(`${file.name}: ${error instanceof Error ? error.message : String(error)}`)
    }
  )
}

/** Drop files here or pick them: each becomes a source, uploaded one after another. */
export const DropFiles = ({ tableId, onAdded }: { tableId: number; onAdded: () => void }) => {
  const dragging = useSignal(false)
  const picker = useRef<HTMLInputElement>(null)
  const add = async (list: FileList | null | undefined) => {
    const files = Array.from(list ?? [])
    for (const file of files) await send(tableId, file, onAdded)
    if (files.length > 0 && !uploads.value.some((u) => u.error !== undefined)) {
      say(files.length === 1 ? `${files[0]!.name} added.` : `${files.length} files added.`)
    }
  }
  return (
    <div
      class="dropzone"
      data-dragging={dragging.value}
      aria-labelledby="drop-title"
      role="region"
      onDragOver={(e) => (e.preventDefault(), (dragging.value = true))}
      onDragLeave={() => (dragging.value = false)}
      onDrop={(e) => {
        e.preventDefault()
        dragging.value = false
        void add(e.dataTransfer?.files)
      }}
    >
      <h3 id="drop-title">Add files</h3>
      <p class="hint">
        Drop PDF, Word, PowerPoint, Excel, CSV, Markdown, HTML or text files here (up to 50 MB each), or
      </p>
      <input
        ref={picker}
        id="knowledge-files"
        type="file"
        multiple
        class="visually-hidden"
        aria-label="Files to add"
        tabIndex={-1}
        onChange={(e) => {
          const input = e.currentTarget
          void add(input.files).finally(() => (input.value = ""))
        }}
      />
      <button type="button" onClick={() => picker.current?.click()}>Choose files</button>
      {uploads.value.length > 0 && (
        <ul class="uploads" aria-label="Uploads">
          {uploads.value.map((u) => (
            <li key={u.key} data-failed={u.error !== undefined}>
              {u.name} <span class="size">{bytes(u.size)}</span> {u.error === undefined ? <span>uploading…</span> : (
                <>
                  <span class="error" role="alert">{u.error}</span>
                  <button
                    type="button"
                    class="link"
                    aria-label={`Dismiss ${u.name}`}
                    onClick={() => (uploads.value = uploads.value.filter((x) => x.key !== u.key))}
                  >
                    ×
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

const KINDS = [
  ["url", "One page"],
  ["sitemap", "A sitemap's pages"],
  ["crawl", "A crawl of the site (links on the same host)"]
] as const

/** A URL, a sitemap or a crawl, with its page limit and its own sync schedule. */
export const AddUrl = ({ tableId, onAdded }: { tableId: number; onAdded: () => void }) => {
  const kind = useSignal<string>("url")
  const problem = useSignal<string | undefined>(undefined)
  const submit = (e: Event) => {
    e.preventDefault()
    const target = e.currentTarget as HTMLFormElement
    const form = new FormData(target)
    const maxPages = field(form, "max_pages")
    problem.value = undefined
    api<KnowledgeSourceRecord>("POST", `knowledge-tables/${tableId}/sources`, {
      json: {
        kind: kind.value,
        url: field(form, "url") ?? "",
        ...(kind.value === "url" || maxPages === undefined ? {} : { max_pages: Number(maxPages) }),
        sync: field(form, "sync") ?? "off"
      }
    }).then((s) => {
      say(`${s.name} added.`)
      target.reset()
      kind.value = "url"
      onAdded()
    }, (error) => {
      problem.value = explain(error)
      fail(error)
    })
  }
  return (
    <form class="connect add-url" onSubmit={submit} aria-labelledby="add-url-title">
      <h3 id="add-url-title">Add a web page or site</h3>
      <label>
        What to read
        <select name="kind" value={kind.value} onChange={(e) => (kind.value = e.currentTarget.value)}>
          {KINDS.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
        </select>
      </label>
      <label>
        URL <input type="url" name="url" required placeholder="https://help.example.com/" />
      </label>
      {kind.value !== "url" && (
        <label>
          Pages at most <input type="number" name="max_pages" min={1} max={10000} placeholder="100" />
        </label>
      )}
      <label>
        Sync again
        <select name="sync">
          <option value="off">Off (on demand)</option>
          <option value="daily">Daily</option>
          <option value="weekly">Weekly</option>
        </select>
      </label>
      {problem.value !== undefined && <p class="error" role="alert">{problem.value}</p>}
      <button type="submit">Add</button>
    </form>
  )
}
