/**
 * The console's frame: the header (workspace switch, pages, the socket's state, sign out) and the page of
 * the route. Loads the user, the workspace's pipelines and members, and follows the workspace's socket.
 */
import { useEffect } from "preact/hooks"
import { Analytics } from "./Analytics.js"
import { api, type ChannelRecord, type MeInfo, type Member, type PipelineRecord } from "./api.js"
import { Board } from "./Board.js"
import { Channels } from "./Channels.js"
import { ConversationView } from "./Conversation.js"
import { Inbox } from "./Inbox.js"
import { filters } from "./inboxStore.js"
import { useKeys } from "./keys.js"
import { Knowledge, knowledgeReadable } from "./Knowledge.js"
import { follow } from "./live.js"
import { Models } from "./Models.js"
import { channels, connection, fail, me, members, navigate, notice, pipelines, route, workspaceId } from "./state.js"

const WORKSPACE_KEY = "parley.console.workspace"
let shownWorkspace: number | undefined

const csrf = () => document.querySelector<HTMLMetaElement>("meta[name=parley-csrf]")?.content ?? ""

const Nav = () => {
  const page = route.value.page
  const link = (target: "inbox" | "board" | "analytics" | "channels" | "models" | "knowledge", text: string) => (
    <a
      href={target === "inbox" ? "/console" : `/console/${target}`}
      aria-current={page === target ? "page" : undefined}
      onClick={(e) => (e.preventDefault(), navigate({ page: target }))}
    >
      {text}
    </a>
  )
  return (
    <nav aria-label="Console">
      {link("inbox", "Inbox")}
      {link("board", "Board")}
      {link("analytics", "Analytics")}
      {link("channels", "Channels")}
      {link("models", "Models")}
      {knowledgeReadable.value && link("knowledge", "Knowledge")}
    </nav>
  )
}

const Header = () => {
  const m = me.value
  return (
    <header class="top">
      <h1>
        <a href="/console" onClick={(e) => (e.preventDefault(), navigate({ page: "inbox" }))}>Parley</a>
      </h1>
      <Nav />
      <div class="top-right">
        {m !== undefined && m.workspaces.length > 0 && (
          <label>
            <span class="visually-hidden">Workspace</span>
            <select value={workspaceId.value} onChange={(e) => (workspaceId.value = Number(e.currentTarget.value))}>
              {m.workspaces.map((w) => (
                <option key={w.id} value={w.id}>{w.name}{w.role === "manager" ? " (managed)" : ""}</option>
              ))}
            </select>
          </label>
        )}
        <span class="conn" data-state={connection.value} role="status">
          {connection.value === "live" ? "Live" : connection.value === "connecting" ? "Connecting…" : "Offline"}
        </span>
        <form method="post" action="/account/sign-out">
          <input type="hidden" name="csrf" value={csrf()} />
          <button type="submit" class="link">
            Sign out <span class="email">{m?.user.email}</span>
          </button>
        </form>
      </div>
    </header>
  )
}

export const App = () => {
  useEffect(() => {
    api<MeInfo>("GET", "me").then((m) => {
      me.value = m
      const saved = Number(sessionStorage.getItem(WORKSPACE_KEY))
      workspaceId.value = m.workspaces.some((w) => w.id === saved) ? saved : m.workspaces[0]?.id
    }, fail)
    api<ReadonlyArray<PipelineRecord>>("GET", "pipelines").then((p) => (pipelines.value = p), fail)
    api<ReadonlyArray<ChannelRecord>>("GET", "channels").then((c) => (channels.value = c), fail)
  }, [])

  const workspace = workspaceId.value
  useEffect(() => {
    if (workspace === undefined) return
    // another workspace's pipelines, stages and channels mean nothing here
    if (shownWorkspace !== undefined && shownWorkspace !== workspace) filters.value = {}
    shownWorkspace = workspace
    sessionStorage.setItem(WORKSPACE_KEY, String(workspace))
    follow(workspace)
    api<ReadonlyArray<Member>>("GET", `workspaces/${workspace}/members`).then((list) => (members.value = list), fail)
  }, [workspace])

  useKeys()

  const r = route.value
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <Header />
      <main id="main" data-page={r.page} data-open={r.page === "inbox" && r.conversationId !== undefined}>
        {workspace === undefined
          ? <p class="boot">Loading…</p>
          : r.page === "inbox"
          ? (
            <div class="inbox-layout">
              <Inbox />
              {r.conversationId !== undefined
                ? <ConversationView key={r.conversationId} id={r.conversationId} />
                : (
                  <section class="conversation empty-state">
                    <p>Choose a conversation (j/k to move, Enter to open).</p>
                  </section>
                )}
            </div>
          )
          : r.page === "board"
          ? <Board />
          : r.page === "channels"
          ? <Channels />
          : r.page === "models"
          ? <Models />
          : r.page === "knowledge"
          ? <Knowledge tableId={r.tableId} />
          : <Analytics />}
      </main>
      <div
        class="notice"
        role={notice.value?.error === true ? "alert" : "status"}
        data-error={notice.value?.error === true}
      >
        {notice.value?.text}
      </div>
    </>
  )
}
