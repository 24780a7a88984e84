/**
 * A scripted browser for the OAuth pages: `fetch` with a cookie jar that follows redirects on the
 * server's own origin, reads the forms' hidden fields (CSRF token included) and posts them back. A
 * redirect to another origin (the client's loopback redirect URI) is not followed but captured.
 */
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens
} from "@modelcontextprotocol/sdk/shared/auth.js"

export interface Page {
  readonly url: string
  readonly status: number
  readonly html: string
  readonly headers: Headers
}

const unescape = (s: string) =>
  s.replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&")

/** The inside of the first form posting to `action`. */
const formOf = (html: string, action: string) => {
  const form = new RegExp(`<form[^>]*action="${action.replace(/[/?]/g, "\\$&")}"[^>]*>([\\s\\S]*?)</form>`).exec(html)
  if (form === null) throw new Error(`no form posting to ${action} in:\n${html}`)
  return form[1]!
}

/** The hidden inputs of the first form posting to `action`. */
export const hiddenFields = (html: string, action: string) => {
  const fields: Record<string, string> = {}
  for (const input of formOf(html, action).matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) {
    fields[unescape(input[1]!)] = unescape(input[2]!)
  }
  return fields
}

/**
 * The values of the ticked checkboxes named `name` in the first form posting to `action`, as a browser submits them.
 */
export const tickedBoxes = (html: string, action: string, name: string) =>
  [...formOf(html, action).matchAll(/<input type="checkbox"([^>]*)>/g)]
    .map((input) => input[1]!)
    .filter((attributes) =>
      attributes.includes(` name="${name}"`) && /\schecked(\s|$)/.test(attributes) &&
      !/\sdisabled(\s|$)/.test(attributes)
    )
    .map((attributes) => unescape(/ value="([^"]*)"/.exec(attributes)![1]!))

export class ScriptedBrowser {
  readonly cookies = new Map<string, string>()
  /** Where the last redirect off this origin pointed (the client's redirect URI with code or error). */
  leftTo: URL | undefined

  constructor(readonly origin: string) {}

  /** One request, cookies sent and stored, redirects not followed. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (this.cookies.size > 0) headers.set("cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "))
    const response = await fetch(new URL(url, this.origin), { ...init, headers, redirect: "manual" })
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";")
      const eq = pair!.indexOf("=")
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=thu, 01 jan 1970/i.test(a))
      if (expired || value === "") this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return response
  }

  /** GET (or POST a form) and follow same-origin redirects to a page; stop at a redirect elsewhere. */
  async open(url: string, form?: Record<string, string | ReadonlyArray<string>>): Promise<Page> {
    let response: Response
    let current = new URL(url, this.origin).toString()
    if (form !== undefined) {
      const body = new URLSearchParams()
      for (const [k, v] of Object.entries(form)) {
        for (const value of typeof v === "string" ? [v] : v) body.append(k, value)
      }
      response = await this.request(current, {
        method: "POST",
        body,
        headers: { "content-type": "application/x-www-form-urlencoded" }
      })
    } else {
      response = await this.request(current)
    }
    for (let hops = 0; response.status >= 300 && response.status < 400; hops++) {
      if (hops > 10) throw new Error("too many redirects")
      const next = new URL(response.headers.get("location")!, current)
      if (next.origin !== this.origin) {
        this.leftTo = next
        return { url: next.toString(), status: response.status, html: "", headers: response.headers }
      }
      current = next.toString()
      response = await this.request(current)
    }
    return { url: current, status: response.status, html: await response.text(), headers: response.headers }
  }

  /**
   * From any page of the flow: sign in when asked, then answer the consent page: with `grant`, the
   * scope boxes ticked are exactly those; without, they are left as the page pre-selects them.
   */
  async authorize(
    authorizationUrl: URL | string,
    user: { readonly email: string; readonly password: string },
    consent: { readonly decision: "approve" | "deny"; readonly grant?: ReadonlyArray<string> }
  ): Promise<{ readonly consentPage: Page; readonly redirect: URL }> {
    this.leftTo = undefined
    let page = await this.open(authorizationUrl.toString())
    if (new URL(page.url).pathname === "/account/sign-in") {
      const fields = hiddenFields(page.html, "/account/sign-in")
      page = await this.open("/account/sign-in", { ...fields, email: user.email, password: user.password })
    }
    if (page.status !== 200 || new URL(page.url).pathname !== "/authorize") {
      throw new Error(`expected the consent page, got ${page.status} at ${page.url}:\n${page.html}`)
    }
    const consentPage = page
    const grant = consent.grant ?? tickedBoxes(page.html, "/authorize", "grant")
    await this.open("/authorize", { ...hiddenFields(page.html, "/authorize"), decision: consent.decision, grant })
    if (this.leftTo === undefined) throw new Error("the consent did not redirect to the client")
    return { consentPage, redirect: this.leftTo }
  }
}

/** An MCP client's OAuth state in memory; `redirectToAuthorization` hands the URL to a scripted browser. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier: string | undefined
  lastState: string | undefined
  authorizationUrls: Array<URL> = []

  constructor(
    readonly redirectUrl: string,
    readonly clientMetadata: OAuthClientMetadata,
    readonly onAuthorize: (url: URL) => Promise<void>
  ) {}

  state() {
    this.lastState = `state-${Math.random().toString(36).slice(2)}`
    return this.lastState
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  async redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url)
    await this.onAuthorize(url)
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    if (this.verifier === undefined) throw new Error("no code verifier saved")
    return this.verifier
  }
}
