/**
 * The account and consent pages: small server-rendered HTML, no scripts, labelled controls, every
 * interpolated value escaped.
 */
import { type Scope, Scopes } from "@parley/domain"
import { escapeHtml as escape, htmlResponse } from "../http/PageHeaders.js"
import type { PersonalTokenRow } from "../identity/IdentityRepo.js"
import type { ConnectedClientRow } from "../oauth/OAuthRepo.js"
import type { AuthorizeRequest } from "../oauth/OAuthRequests.js"
import type { Session } from "./Sessions.js"

const isReadScope = (scope: Scope) => scope.endsWith(":read")

const SCOPE_TEXT: Record<Scope, string> = {
  "mcp:use": "Use Parley's MCP tools as you (pipelines, stages, analytics)",
  "opportunities:read": "Read contacts, opportunities and messages",
  "opportunities:write": "Create and change opportunities",
  "knowledge:read": "Read and search knowledge tables",
  "knowledge:write": "Change knowledge tables and points",
  "messages:send": "Send messages in conversations",
  "conversations:read": "Read conversations and their messages",
  "conversations:write": "Change conversations, take them over and hand them back",
  "pipelines:read": "Read pipelines over the REST API",
  "pipelines:write": "Change pipelines over the REST API",
  "channels:read": "Read channels",
  "channels:write": "Change and connect channels",
  "models:read": "Read the model providers and models",
  "models:write": "Add and change model providers (their keys) and models"
}

const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { margin: 0; padding: 1.5rem; }
  main { max-width: 46rem; margin: 0 auto; }
  h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
  label { display: block; margin: .6rem 0 .2rem; font-weight: 600; }
  fieldset label { display: inline; font-weight: normal; }
  fieldset div { margin: .25rem 0; }
  input[type=email], input[type=password], input[type=text], input[type=number] { width: 100%; max-width: 24rem; padding: .4rem; font: inherit; }
  button { font: inherit; padding: .4rem .9rem; margin: .6rem .4rem .2rem 0; cursor: pointer; }
  table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #8884; vertical-align: top; }
  .error { color: #b00020; font-weight: 600; } .notice { border: 2px solid #2a7; padding: .8rem; border-radius: .4rem; }
  code.secret { display: block; word-break: break-all; padding: .5rem; background: #8882; }
  header { display: flex; justify-content: space-between; align-items: center; gap: 1rem; flex-wrap: wrap; }
  form.inline { display: inline; }
  .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`

export interface PageOptions {
  readonly status?: number
  /** Extra `form-action` sources: the consent form's post redirects to the client. */
  readonly formAction?: ReadonlyArray<string>
}

/** An HTML page that is never cached, framed or sent with a referrer, and runs no script. */
export const htmlPage = (title: string, body: string, options: PageOptions = {}) =>
  htmlResponse(
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Parley</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`,
    { "style-src": ["'unsafe-inline'"], "form-action": ["'self'", ...(options.formAction ?? [])] },
    { status: options.status ?? 200, cache: "no-store" }
  )

const hidden = (name: string, value: string) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`

export const errorPage = (title: string, message: string, status: number) =>
  htmlPage(
    title,
    `<h1>${escape(title)}</h1>\n<p class="error" role="alert">${
      escape(message)
    }</p>\n<p><a href="/account">Your account</a></p>`,
    { status }
  )

export const signInPage = (input: {
  readonly csrf: string
  readonly returnTo: string
  readonly email?: string
  readonly error?: string
  readonly status?: number
}) =>
  htmlPage(
    "Sign in",
    `<h1>Sign in to Parley</h1>
${input.error === undefined ? "" : `<p class="error" role="alert" id="sign-in-error">${escape(input.error)}</p>`}
<form method="post" action="/account/sign-in">
  ${hidden("csrf", input.csrf)}
  ${hidden("return_to", input.returnTo)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${escape(input.email ?? "")}"${
      input.error === undefined ? "" : ` aria-describedby="sign-in-error"`
    }>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <div><button type="submit">Sign in</button></div>
</form>`,
    { status: input.status ?? 200 }
  )

const signOutForm = (session: Session) =>
  `<form class="inline" method="post" action="/account/sign-out">${
    hidden("csrf", session.csrf)
  }<button type="submit">Sign out</button></form>`

const header = (session: Session) =>
  `<header><p>Signed in as <strong>${escape(session.email)}</strong></p>${signOutForm(session)}</header>`

export const consentPage = (request: AuthorizeRequest, session: Session) => {
  const name = request.client.client_name ?? "An application"
  const target = new URL(request.redirectUri)
  const extras = request.scopes.filter((s) => s !== "mcp:use")
  // least privilege: reading is offered ticked, anything that changes data or sends is shown unticked
  const box = (s: Scope) =>
    `<div><input type="checkbox" id="scope-${escape(s)}" name="grant" value="${escape(s)}"${
      isReadScope(s) ? " checked" : ""
    }> <label for="scope-${escape(s)}"><code>${escape(s)}</code>: ${escape(SCOPE_TEXT[s])}${
      isReadScope(s) ? "" : " <strong>(changes your data)</strong>"
    }</label></div>`
  return htmlPage(
    "Authorize application",
    `${header(session)}
<h1>Allow ${escape(name)} to use your Parley account?</h1>
<p><strong>${escape(name)}</strong> (client <code>${escape(request.client.id)}</code>${
      request.client.client_uri === null ? "" : `, ${escape(request.client.client_uri)}`
    }) wants to connect to Parley's MCP server as you. After you decide, you return to <code>${
      escape(target.origin)
    }</code>.</p>
<form method="post" action="/authorize">
  ${Object.entries(request.params).map(([k, v]) => hidden(k, v)).join("\n  ")}
  ${hidden("csrf", session.csrf)}
  <fieldset>
    <legend>It will be able to</legend>
    <div><input type="checkbox" id="scope-mcp" checked disabled> <label for="scope-mcp"><code>mcp:use</code>: ${
      escape(SCOPE_TEXT["mcp:use"])
    }</label></div>
    ${extras.map(box).join("\n    ")}
  </fieldset>
  ${
      extras.length > 0
        ? "<p>These are the permissions the application asked for. Reading is ticked; permissions that change your data or send messages are not: tick only those you want it to have. Unticked ones are not granted.</p>"
        : ""
    }
  <button type="submit" name="decision" value="approve">Allow</button>
  <button type="submit" name="decision" value="deny">Deny</button>
</form>`,
    { formAction: [target.origin] }
  )
}

const date = (value: string | null) =>
  value === null ? "never" : escape(new Date(value).toISOString().slice(0, 16).replace("T", " ") + " UTC")

export const accountPage = (input: {
  readonly session: Session
  readonly tokens: ReadonlyArray<PersonalTokenRow>
  readonly clients: ReadonlyArray<ConnectedClientRow>
  readonly newToken?: { readonly name: string; readonly token: string } | undefined
  readonly error?: string | undefined
  readonly status?: number
}) => {
  const { session } = input
  const tokenRows = input.tokens.map((t) =>
    `<tr>
      <td>${escape(t.name)}</td>
      <td><code>…${escape(t.token_hint)}</code></td>
      <td>${t.scopes.map((s) => `<code>${escape(s)}</code>`).join(", ")}</td>
      <td>${date(t.created_at)}</td>
      <td>${date(t.last_used_at)}</td>
      <td>${t.expires_at === null ? "never" : `${date(t.expires_at)}${t.expired ? " (expired)" : ""}`}</td>
      <td><form method="post" action="/account/tokens/revoke">${hidden("csrf", session.csrf)}${
      hidden("id", String(t.id))
    }<button type="submit" aria-label="Revoke token ${escape(t.name)}">Revoke</button></form></td>
    </tr>`
  ).join("\n")
  const clientRows = input.clients.map((c) =>
    `<tr>
      <td>${escape(c.client_name ?? "Unnamed application")}<br><small><code>${escape(c.client_id)}</code></small></td>
      <td>${c.scopes.map((s) => `<code>${escape(s)}</code>`).join(", ")}</td>
      <td>${date(c.first_authorized_at)}</td>
      <td>${date(c.last_used_at)}</td>
      <td><form method="post" action="/account/clients/revoke">${hidden("csrf", session.csrf)}${
      hidden("client_id", c.client_id)
    }<button type="submit" aria-label="Disconnect ${
      escape(c.client_name ?? c.client_id)
    }">Disconnect</button></form></td>
    </tr>`
  ).join("\n")
  return htmlPage(
    "Your account",
    `${header(session)}
<h1>Your account</h1>
${input.error === undefined ? "" : `<p class="error" role="alert">${escape(input.error)}</p>`}
${
      input.newToken === undefined ? "" : `<section class="notice" aria-labelledby="new-token-title" id="new-token">
  <h2 id="new-token-title">Token “${escape(input.newToken.name)}” created</h2>
  <p>Copy it now: it is shown only this once.</p>
  <code class="secret" id="new-token-value">${escape(input.newToken.token)}</code>
</section>`
    }
<h2 id="tokens-title">Personal access tokens</h2>
<p>Tokens for the REST API and MCP clients without OAuth: <code>Authorization: Bearer &lt;token&gt;</code>.</p>
${
      input.tokens.length === 0 ?
        `<p id="no-tokens">You have no personal access tokens.</p>` :
        `<table aria-labelledby="tokens-title" id="tokens">
  <thead><tr><th scope="col">Name</th><th scope="col">Token</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
${tokenRows}
  </tbody>
</table>`
    }
<h2 id="create-title">Create a token</h2>
<form method="post" action="/account/tokens" aria-labelledby="create-title">
  ${hidden("csrf", session.csrf)}
  <label for="token-name">Name</label>
  <input id="token-name" name="name" type="text" required maxlength="100" placeholder="e.g. claude-desktop">
  <fieldset>
    <legend>Scopes</legend>
    ${
      Scopes.map((s) =>
        `<div><input type="checkbox" id="new-scope-${escape(s)}" name="scope" value="${
          escape(s)
        }"> <label for="new-scope-${escape(s)}"><code>${escape(s)}</code>: ${escape(SCOPE_TEXT[s])}</label></div>`
      ).join("\n    ")
    }
  </fieldset>
  <label for="token-expiry">Expires after (days, empty for never)</label>
  <input id="token-expiry" name="expires_in_days" type="number" min="1" max="3650" inputmode="numeric">
  <div><button type="submit">Create token</button></div>
</form>
<h2 id="clients-title">Connected applications</h2>
${
      input.clients.length === 0 ?
        `<p id="no-clients">No application is connected through OAuth.</p>` :
        `<table aria-labelledby="clients-title" id="clients">
  <thead><tr><th scope="col">Application</th><th scope="col">Scopes</th><th scope="col">Connected</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
${clientRows}
  </tbody>
</table>`
    }`,
    { status: input.status ?? 200 }
  )
}
