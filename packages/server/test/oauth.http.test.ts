/**
 * OAuth 2.1 for MCP clients (SPEC.md 5.2) through the MCP SDK's own client: discovery from the 401 of
 * `/mcp` (RFC 9728, RFC 8414), dynamic registration (RFC 7591), the sign-in and consent pages driven by a
 * scripted browser, PKCE (RFC 7636), the token endpoint with rotating refresh tokens, resource
 * indicators (RFC 8707) and revocation (RFC 7009); the tokens on `/mcp` and on REST.
 */
import { expect, layer } from "@effect/vitest"
import { auth, extractWWWAuthenticateParams, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { OAuthClientMetadata } from "@modelcontextprotocol/sdk/shared/auth.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import {
  AuthorizationServerMetadata,
  ClientRegistrationResponse,
  OAuthErrorBody,
  OAuthTokenResponse,
  Scopes
} from "@parley/domain"
import { Effect, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import * as Http from "node:http"
import { sha256Hex } from "../src/identity/Secrets.js"
import { McpScopes } from "../src/mcp/Scopes.js"
import { bodyAs } from "./support/Contract.js"
import { textOf } from "./support/McpClient.js"
import { sqlRows } from "./support/Opportunities.js"
import { MemoryOAuthProvider, ScriptedBrowser, tickedBoxes } from "./support/ScriptedBrowser.js"
import { fetchJson, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"

const REDIRECT = "http://127.0.0.1:53682/callback"
const ADVERTISED = McpScopes.join(" ")
/** What one click on Allow grants: the consent page ticks only the read scopes (and mcp:use, always). */
const READ_ONLY = McpScopes.filter((s) => s === "mcp:use" || s.endsWith(":read")).join(" ")
const PASSWORD = "correct horse battery"

const metadata = (overrides: Partial<OAuthClientMetadata> = {}): OAuthClientMetadata => ({
  client_name: "Parley test client",
  redirect_uris: [REDIRECT],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  ...overrides
})

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

const form = (baseUrl: string, path: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  fetchJson(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params)
  })

const mcpStatus = (baseUrl: string, token: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream"
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "list_pipelines", arguments: {} }
      })
    })
    await response.text()
    return response.status
  })

const restStatus = (baseUrl: string, token: string, path: string) =>
  Effect.map(fetchJson(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }), (r) => r.status)

/**
 * The whole dance as an MCP client does it: the 401's `resource_metadata`, then `auth()` registers and
 * sends the browser to sign in and consent, and `auth()` again with the captured code gets the tokens.
 */
const connectWithOAuth = (options: {
  readonly user: { readonly email: string }
  readonly decision?: "approve" | "deny"
  readonly grant?: ReadonlyArray<string>
  readonly clientMetadata?: OAuthClientMetadata
  readonly browser?: ScriptedBrowser
}) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const browser = options.browser ?? new ScriptedBrowser(baseUrl)
    let consent: { consentPage: { html: string }; redirect: URL } | undefined
    const provider = new MemoryOAuthProvider(REDIRECT, options.clientMetadata ?? metadata(), async (url) => {
      consent = await browser.authorize(url, { email: options.user.email, password: PASSWORD }, {
        decision: options.decision ?? "approve",
        ...(options.grant !== undefined ? { grant: options.grant } : {})
      })
    })
    const serverUrl = new URL(`${baseUrl}/mcp`)
    const challenge = yield* Effect.promise(() =>
      fetch(serverUrl, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    )
    expect(challenge.status).toBe(401)
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(challenge)
    expect(String(resourceMetadataUrl)).toBe(`${baseUrl}/.well-known/oauth-protected-resource/mcp`)

    const first = yield* Effect.promise(() => auth(provider, { serverUrl, resourceMetadataUrl: resourceMetadataUrl! }))
    expect(first).toBe("REDIRECT")
    expect(consent).toBeDefined()
    return { provider, browser, consent: consent!, serverUrl, resourceMetadataUrl: resourceMetadataUrl! }
  })

const finish = (flow: Effect.Effect.Success<ReturnType<typeof connectWithOAuth>>) =>
  Effect.gen(function*() {
    const { redirect } = flow.consent
    expect(redirect.origin + redirect.pathname).toBe(REDIRECT)
    expect(redirect.searchParams.get("state")).toBe(flow.provider.lastState)
    const code = redirect.searchParams.get("code")
    expect(code).toMatch(/^[A-Za-z0-9]{43}$/)
    const result = yield* Effect.promise(() =>
      auth(flow.provider, {
        serverUrl: flow.serverUrl,
        resourceMetadataUrl: flow.resourceMetadataUrl,
        authorizationCode: code!
      })
    )
    expect(result).toBe("AUTHORIZED")
    return flow.provider.saved!
  })

const mcpClient = (serverUrl: URL, provider: MemoryOAuthProvider) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "parley-oauth-test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** A registration from another loopback source address, so its rate-limit window is its own. */
const registerFrom = (baseUrl: string, localAddress: string, body: unknown) =>
  Effect.promise(() =>
    new Promise<{ status: number; headers: Http.IncomingHttpHeaders; body: unknown }>((resolve, reject) => {
      const request = Http.request(`${baseUrl}/register`, {
        method: "POST",
        localAddress,
        headers: { "content-type": "application/json" }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on(
          "end",
          () =>
            resolve({
              status: res.statusCode!,
              headers: res.headers,
              body: JSON.parse(Buffer.concat(chunks).toString("utf8"))
            })
        )
      })
      request.on("error", reject)
      request.end(JSON.stringify(body))
    })
  )

layer(TestServerLive(), { excludeTestServices: true })("OAuth 2.1 for MCP clients", (it) => {
  it.effect("publishes protected-resource (RFC 9728) and authorization-server (RFC 8414) metadata", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const unauthorized = yield* fetchJson(`${baseUrl}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}"
      })
      expect(unauthorized.status).toBe(401)
      // RFC 6750 3.1: no credentials, no error code; the scopes a client should ask for
      expect(unauthorized.headers.get("www-authenticate")).toBe(
        `Bearer resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/mcp", scope="${McpScopes.join(" ")}"`
      )
      for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
        const resource = yield* fetchJson(`${baseUrl}${path}`)
        expect(resource.status).toBe(200)
        expect(resource.body).toMatchObject({
          resource: `${baseUrl}/mcp`,
          authorization_servers: [baseUrl],
          scopes_supported: [...McpScopes],
          bearer_methods_supported: ["header"]
        })
      }
      const server = yield* fetchJson(`${baseUrl}/.well-known/oauth-authorization-server`)
      expect(server.status).toBe(200)
      expect(server.body).toMatchObject({
        issuer: baseUrl,
        authorization_endpoint: `${baseUrl}/authorize`,
        token_endpoint: `${baseUrl}/token`,
        registration_endpoint: `${baseUrl}/register`,
        revocation_endpoint: `${baseUrl}/revoke`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        scopes_supported: [...Scopes]
      })
      expect(bodyAs(server, AuthorizationServerMetadata).token_endpoint_auth_methods_supported).toEqual(
        expect.arrayContaining(["none", "client_secret_post"])
      )
      expect(server.headers.get("access-control-allow-origin")).toBe("*")
    }))

  it.effect("the 401 has an error code only for a bad token (RFC 6750 3.1), and always the scopes to ask for", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const resourceMetadata = `resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/mcp"`
      // mcp:use and the scopes of the tools that need more, none of the REST-only ones
      expect(McpScopes[0]).toBe("mcp:use")
      expect([...McpScopes].sort()).toEqual([
        "conversations:read",
        "conversations:write",
        "knowledge:read",
        "knowledge:write",
        "mcp:use",
        "opportunities:read",
        "opportunities:write",
        ...McpScopes.filter((s) => s.startsWith("pipelines:"))
      ].sort())
      const challengeFor = (authorization?: string) =>
        Effect.map(
          fetchJson(`${baseUrl}/mcp`, {
            method: "POST",
            headers: { "content-type": "application/json", ...(authorization !== undefined ? { authorization } : {}) },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
          }),
          (r) => ({ status: r.status, challenge: r.headers.get("www-authenticate") })
        )
      const noCredentials = `Bearer ${resourceMetadata}, scope="${ADVERTISED}"`
      expect(yield* challengeFor()).toEqual({ status: 401, challenge: noCredentials })
      // another scheme is no bearer credentials either
      expect(yield* challengeFor(`Basic ${Buffer.from("a:b").toString("base64")}`)).toEqual({
        status: 401,
        challenge: noCredentials
      })
      const invalid = `Bearer error="invalid_token", ${resourceMetadata}, scope="${ADVERTISED}"`
      for (const authorization of ["Bearer pat_not-a-real-token", "Bearer oat_unknown", "Bearer", "Bearer two parts"]) {
        expect(yield* challengeFor(authorization), authorization).toEqual({ status: 401, challenge: invalid })
      }
    }))

  it.scoped("out of the box, the SDK client asks for the scopes the 401 names, the consent page pre-selects them, and every tool passes its scope check", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const browser = new ScriptedBrowser(baseUrl)
      let consent: Awaited<ReturnType<ScriptedBrowser["authorize"]>> | undefined
      // the user only clicks Allow
      const provider = new MemoryOAuthProvider(REDIRECT, metadata(), async (url) => {
        // the user ticks everything the client asked for (only the read scopes come ticked)
        consent = await browser.authorize(url, { email: user.email, password: PASSWORD }, {
          decision: "approve",
          grant: McpScopes.filter((s) => s !== "mcp:use")
        })
      })
      const serverUrl = new URL(`${baseUrl}/mcp`)
      const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
      const refused = yield* Effect.promise(() =>
        new Client({ name: "parley-oauth-test", version: "1.0.0" }).connect(transport).then(
          () => undefined,
          (e: unknown) => e
        )
      )
      expect(refused).toBeInstanceOf(UnauthorizedError)
      expect(provider.authorizationUrls).toHaveLength(1)
      expect(provider.authorizationUrls[0]!.searchParams.get("scope")).toBe(ADVERTISED)
      const page = consent!.consentPage.html
      expect(tickedBoxes(page, "/authorize", "grant")).toEqual(McpScopes.filter((s) => s.endsWith(":read")))
      for (const scope of McpScopes.filter((s) => s !== "mcp:use" && !s.endsWith(":read"))) {
        expect(page).toMatch(
          new RegExp(
            `name="grant" value="${scope}"> <label for="scope-${scope}"><code>${scope}</code>: [^<]+<strong>\\(changes your data\\)</strong>`
          )
        )
      }
      yield* Effect.promise(() => transport.finishAuth(consent!.redirect.searchParams.get("code")!))
      expect(provider.saved!.scope).toBe(ADVERTISED)

      const client = yield* mcpClient(serverUrl, provider)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.length).toBeGreaterThanOrEqual(33)
      for (const tool of tools) {
        // empty arguments: the scope is checked before them, so a missing one would show here
        const result = (yield* Effect.promise(() =>
          client.callTool({ name: tool.name, arguments: {} })
        )) as CallToolResult
        expect(textOf(result), tool.name).not.toContain("Missing required scope")
        expect((result.structuredContent as { error?: string } | undefined)?.error, tool.name).not.toBe("Forbidden")
      }
    }))

  it.scoped("the consent page pre-selects the read scopes the client asked for, not the write ones; what the user unticks is not granted", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const flow = yield* connectWithOAuth({ user, grant: ["knowledge:read"] })
      const asked = ["mcp:use", "knowledge:read", "knowledge:write", "openid"]
      const url = new URL(flow.provider.authorizationUrls[0]!)
      url.searchParams.set("scope", asked.join(" "))
      const page = yield* Effect.promise(() => flow.browser.open(url.toString()))
      expect(page.status).toBe(200)
      // exactly the known scopes asked for, the read one ticked, the write one shown but not; mcp:use always, not a
      // choice
      expect(tickedBoxes(page.html, "/authorize", "grant")).toEqual(["knowledge:read"])
      expect(page.html).toContain(`value="knowledge:write">`)
      expect(page.html).toContain(`id="scope-mcp" checked disabled`)
      expect(page.html).not.toContain(`value="opportunities:read"`)
      expect(page.html).not.toContain(`id="scope-openid"`)
      // the user unticked knowledge:write
      const { redirect } = yield* Effect.promise(() =>
        flow.browser.authorize(url, { email: user.email, password: PASSWORD }, {
          decision: "approve",
          grant: ["knowledge:read"]
        })
      )
      const tokens = yield* finish({ ...flow, consent: { ...flow.consent, redirect } })
      expect(tokens.scope).toBe("mcp:use knowledge:read")
      expect(yield* restStatus(baseUrl, tokens.access_token, "/api/user/knowledge-tables")).toBe(200)
      const client = yield* mcpClient(flow.serverUrl, flow.provider)
      const refused = (yield* Effect.promise(() =>
        client.callTool({ name: "delete_knowledge_points", arguments: { knowledge_table_id: 1, ids: ["x"] } })
      )) as CallToolResult
      expect(textOf(refused)).toBe("Missing required scope: knowledge:write")
    }))

  it.scoped("an MCP client that knows only /mcp signs in through the browser, consents, and lists and calls tools", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const flow = yield* connectWithOAuth({ user, grant: ["opportunities:read"] })
      const page = flow.consent.consentPage.html
      expect(page).toContain("Parley test client")
      expect(page).toContain("<code>mcp:use</code>")
      expect(page).toContain(`value="opportunities:read"`)
      expect(page).toContain(`value="knowledge:write"`)
      expect(flow.browser.cookies.get("parley_session")).toBeDefined()

      const tokens = yield* finish(flow)
      expect(tokens).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "mcp:use opportunities:read" })
      expect(tokens.access_token).toMatch(/^oat_/)
      expect(tokens.refresh_token).toMatch(/^ort_/)

      // hashed at rest, expiring, scoped, and tied to the client that registered
      const rows =
        yield* sqlRows`select token_hash, scopes, oauth_client_id, expires_at from access_tokens where token_hash = ${
          sha256Hex(tokens.access_token)
        }`
      expect(rows).toHaveLength(1)
      expect(rows[0]!.oauth_client_id).toBe(flow.provider.client!.client_id)
      expect(rows[0]!.scopes).toEqual(["mcp:use", "opportunities:read"])
      expect(rows[0]!.expires_at).not.toBeNull()
      expect(yield* sqlRows`select 1 from access_tokens where token_hash = ${tokens.access_token}`).toHaveLength(0)

      const client = yield* mcpClient(flow.serverUrl, flow.provider)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((t) => t.name)).toContain("list_pipelines")
      const pipelines = (yield* Effect.promise(() =>
        client.callTool({ name: "list_pipelines", arguments: {} })
      )) as CallToolResult
      expect(pipelines.isError ?? false).toBe(false)
      expect(pipelines.structuredContent).toMatchObject({ pipelines: [] })
      const contacts = (yield* Effect.promise(() =>
        client.callTool({ name: "list_contacts", arguments: {} })
      )) as CallToolResult
      expect(contacts.isError ?? false).toBe(false)
      const search = (yield* Effect.promise(() =>
        client.callTool({ name: "list_knowledge_points", arguments: { knowledge_table_id: 1 } })
      )) as CallToolResult
      expect(search.isError).toBe(true)
      expect(textOf(search)).toContain("Missing required scope: knowledge:read")

      // REST honours exactly the approved scopes
      expect(yield* restStatus(baseUrl, tokens.access_token, "/api/user/opportunities")).toBe(200)
      expect(yield* restStatus(baseUrl, tokens.access_token, "/api/user/knowledge-tables")).toBe(403)
      expect(yield* restStatus(baseUrl, tokens.access_token, "/api/user/me")).toBe(200)

      // the account page lists the connected application
      const account = yield* Effect.promise(() =>
        flow.browser.open("/account")
      )
      expect(account.html).toContain("Parley test client")
      expect(account.html).toContain(flow.provider.client!.client_id)
    }))

  it.scoped("refresh tokens rotate; the old one is refused afterwards and its replay ends the grant", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const flow = yield* connectWithOAuth({ user })
      const first = yield* finish(flow)
      expect(first.scope).toBe(READ_ONLY)

      const refreshed = yield* Effect.promise(() =>
        auth(flow.provider, { serverUrl: flow.serverUrl, resourceMetadataUrl: flow.resourceMetadataUrl })
      )
      expect(refreshed).toBe("AUTHORIZED")
      const second = flow.provider.saved!
      expect(second.access_token).not.toBe(first.access_token)
      expect(second.refresh_token).not.toBe(first.refresh_token)
      expect(second.scope).toBe(READ_ONLY)
      expect(yield* mcpStatus(baseUrl, second.access_token)).toBe(200)

      const replay = yield* form(baseUrl, "/token", {
        grant_type: "refresh_token",
        refresh_token: first.refresh_token!,
        client_id: flow.provider.client!.client_id
      })
      expect(replay.status).toBe(400)
      expect(bodyAs(replay, OAuthErrorBody).error).toBe("invalid_grant")
      expect(replay.headers.get("cache-control")).toBe("no-store")
      // RFC 9700 4.14.2: a replayed refresh token revokes the whole grant, the rotated tokens included
      expect(yield* mcpStatus(baseUrl, second.access_token)).toBe(401)
      const afterReplay = yield* form(baseUrl, "/token", {
        grant_type: "refresh_token",
        refresh_token: second.refresh_token!,
        client_id: flow.provider.client!.client_id
      })
      expect(bodyAs(afterReplay, OAuthErrorBody).error).toBe("invalid_grant")
    }))

  it.scoped("a confidential client registers with a secret and must present it at the token endpoint", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const flow = yield* connectWithOAuth({
        user,
        clientMetadata: metadata({ client_name: "Confidential app", token_endpoint_auth_method: "client_secret_post" })
      })
      const info = flow.provider.client as {
        client_id: string
        client_secret?: string
        token_endpoint_auth_method?: string
      }
      expect(info.client_secret).toMatch(/^mcs_/)
      expect(info.token_endpoint_auth_method).toBe("client_secret_post")
      const tokens = yield* finish(flow)
      expect(yield* mcpStatus(baseUrl, tokens.access_token)).toBe(200)

      const noSecret = yield* form(baseUrl, "/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token!,
        client_id: info.client_id
      })
      expect(noSecret.status).toBe(401)
      expect(bodyAs(noSecret, OAuthErrorBody).error).toBe("invalid_client")
      const wrongSecret = yield* form(baseUrl, "/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token!,
        client_id: info.client_id,
        client_secret: "mcs_wrong"
      })
      expect(bodyAs(wrongSecret, OAuthErrorBody).error).toBe("invalid_client")
      const basic = yield* form(baseUrl, "/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token!
      }, {
        authorization: `Basic ${Buffer.from(`${info.client_id}:${info.client_secret}`).toString("base64")}`
      })
      expect(basic.status).toBe(200)
      expect(bodyAs(basic, OAuthTokenResponse).access_token).toMatch(/^oat_/)
    }))

  it.scoped("a reused code, a wrong verifier and a missing or plain PKCE challenge fail as RFC 6749 and 7636 say", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const registered = yield* fetchJson(`${baseUrl}/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client_name: "Hand-made",
          redirect_uris: [REDIRECT],
          token_endpoint_auth_method: "none"
        })
      })
      expect(registered.status).toBe(201)
      expect(registered.body).toMatchObject({
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: "none",
        response_types: ["code"]
      })
      expect(bodyAs(registered, ClientRegistrationResponse).client_secret).toBeUndefined()
      const clientId: string = bodyAs(registered, ClientRegistrationResponse).client_id
      const browser = new ScriptedBrowser(baseUrl)
      const authorizeUrl = (params: Record<string, string>) => {
        const url = new URL(`${baseUrl}/authorize`)
        for (
          const [k, v] of Object.entries({
            response_type: "code",
            client_id: clientId,
            redirect_uri: REDIRECT,
            state: "s1",
            ...params
          })
        ) {
          if (v !== "") url.searchParams.set(k, v)
        }
        return url
      }

      // missing challenge, plain method, foreign resource: the error goes back to the client, with the state
      for (
        const [params, error] of [
          [{}, "invalid_request"],
          [{ code_challenge: pkce().challenge, code_challenge_method: "plain" }, "invalid_request"],
          [{
            code_challenge: pkce().challenge,
            code_challenge_method: "S256",
            resource: "https://elsewhere.example/mcp"
          }, "invalid_target"],
          [
            { code_challenge: pkce().challenge, code_challenge_method: "S256", response_type: "token" },
            "unsupported_response_type"
          ]
        ] as const
      ) {
        const response = yield* Effect.promise(() => browser.request(authorizeUrl(params).toString()))
        expect(response.status).toBe(302)
        const location = new URL(response.headers.get("location")!)
        expect(location.origin + location.pathname).toBe(REDIRECT)
        expect(location.searchParams.get("error")).toBe(error)
        expect(location.searchParams.get("state")).toBe("s1")
        expect(location.searchParams.get("iss")).toBe(baseUrl)
      }

      const { verifier, challenge } = pkce()
      const { redirect } = yield* Effect.promise(() =>
        browser.authorize(
          authorizeUrl({ code_challenge: challenge, code_challenge_method: "S256", resource: `${baseUrl}/mcp` }),
          {
            email: user.email,
            password: PASSWORD
          },
          { decision: "approve" }
        )
      )
      const code = redirect.searchParams.get("code")!
      const exchange = (codeVerifier: string, extra: Record<string, string> = {}) =>
        form(baseUrl, "/token", {
          grant_type: "authorization_code",
          code,
          code_verifier: codeVerifier,
          redirect_uri: REDIRECT,
          client_id: clientId,
          resource: `${baseUrl}/mcp`,
          ...extra
        })

      const wrongVerifier = yield* exchange(pkce().verifier)
      expect(wrongVerifier.status).toBe(400)
      expect(bodyAs(wrongVerifier, OAuthErrorBody).error).toBe("invalid_grant")
      const missingVerifier = yield* exchange("")
      expect(missingVerifier.status).toBe(400)
      expect(bodyAs(missingVerifier, OAuthErrorBody).error).toBe("invalid_request")
      const wrongRedirect = yield* exchange(verifier, { redirect_uri: "http://127.0.0.1:53682/other" })
      expect(bodyAs(wrongRedirect, OAuthErrorBody).error).toBe("invalid_grant")
      const wrongResource = yield* exchange(verifier, { resource: "https://elsewhere.example/mcp" })
      expect(bodyAs(wrongResource, OAuthErrorBody).error).toBe("invalid_target")

      const good = yield* exchange(verifier)
      expect(good.status).toBe(200)
      expect(good.headers.get("cache-control")).toBe("no-store")
      // no scope asked: the server's default, the MCP tools' scopes, pre-selected on the consent page
      expect(good.body).toMatchObject({ token_type: "Bearer", scope: READ_ONLY })
      expect(yield* mcpStatus(baseUrl, bodyAs(good, OAuthTokenResponse).access_token)).toBe(200)

      const reused = yield* exchange(verifier)
      expect(reused.status).toBe(400)
      expect(bodyAs(reused, OAuthErrorBody).error).toBe("invalid_grant")
      // RFC 6749 4.1.2: the tokens issued for a code that is replayed are revoked
      expect(yield* mcpStatus(baseUrl, bodyAs(good, OAuthTokenResponse).access_token)).toBe(401)

      const unsupported = yield* form(baseUrl, "/token", { grant_type: "password", client_id: clientId })
      expect(bodyAs(unsupported, OAuthErrorBody).error).toBe("unsupported_grant_type")
      const unknownClient = yield* form(baseUrl, "/token", {
        grant_type: "authorization_code",
        client_id: "mcp_nobody",
        code
      })
      expect(unknownClient.status).toBe(401)
      expect(bodyAs(unknownClient, OAuthErrorBody).error).toBe("invalid_client")
    }))

  it.effect("an unknown client or an unregistered redirect URI gets a 400 page and is never redirected", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const registered = yield* fetchJson(`${baseUrl}/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client_name: "Redirect check",
          redirect_uris: [REDIRECT],
          token_endpoint_auth_method: "none"
        })
      })
      const clientId: string = bodyAs(registered, ClientRegistrationResponse).client_id
      const { challenge } = pkce()
      const attempt = (clientIdParam: string, redirectUri: string) =>
        Effect.promise(async () => {
          const url = new URL(`${baseUrl}/authorize`)
          url.search = new URLSearchParams({
            response_type: "code",
            client_id: clientIdParam,
            redirect_uri: redirectUri,
            code_challenge: challenge,
            code_challenge_method: "S256",
            state: "x"
          }).toString()
          const response = await fetch(url, { redirect: "manual" })
          return {
            status: response.status,
            location: response.headers.get("location"),
            type: response.headers.get("content-type"),
            html: await response.text()
          }
        })
      for (
        const [id, uri] of [
          ["mcp_unknown", REDIRECT],
          [clientId, "https://attacker.example/callback"],
          [clientId, "http://127.0.0.1:53682/elsewhere"],
          [clientId, `${REDIRECT}?extra=1`]
        ] as const
      ) {
        const page = yield* attempt(id, uri)
        expect(page.status).toBe(400)
        expect(page.location).toBeNull()
        expect(page.type).toContain("text/html")
        expect(page.html).toContain("Cannot authorize this application")
      }
      // a loopback redirect URI may come back on another port (RFC 8252 7.3): on to sign-in
      const otherPort = yield* attempt(clientId, "http://127.0.0.1:40001/callback")
      expect(otherPort.status).toBe(303)
      expect(otherPort.location).toMatch(/^\/account\/sign-in\?return_to=%2Fauthorize%3F/)
    }))

  it.scoped("a denied consent redirects with error=access_denied and the state, and issues nothing", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      const flow = yield* connectWithOAuth({ user, decision: "deny" })
      const { redirect } = flow.consent
      expect(redirect.origin + redirect.pathname).toBe(REDIRECT)
      expect(redirect.searchParams.get("error")).toBe("access_denied")
      expect(redirect.searchParams.get("state")).toBe(flow.provider.lastState)
      expect(redirect.searchParams.get("code")).toBeNull()
      expect(yield* sqlRows`select 1 from oauth_codes where user_id = ${user.user_id}`).toHaveLength(0)
    }))

  it.scoped("revocation (RFC 7009) ends the grant: the access token fails on /mcp and the refresh token is refused", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const flow = yield* connectWithOAuth({ user })
      const tokens = yield* finish(flow)
      const clientId = flow.provider.client!.client_id
      expect(yield* mcpStatus(baseUrl, tokens.access_token)).toBe(200)

      // another client's revocation request leaves the token alone (and is answered 200, RFC 7009 2.2)
      const other = yield* fetchJson(`${baseUrl}/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" })
      })
      const foreign = yield* form(baseUrl, "/revoke", {
        token: tokens.access_token,
        client_id: bodyAs(other, ClientRegistrationResponse).client_id
      })
      expect(foreign.status).toBe(200)
      expect(yield* mcpStatus(baseUrl, tokens.access_token)).toBe(200)

      const revoked = yield* form(baseUrl, "/revoke", {
        token: tokens.access_token,
        token_type_hint: "access_token",
        client_id: clientId
      })
      expect(revoked.status).toBe(200)
      expect(yield* mcpStatus(baseUrl, tokens.access_token)).toBe(401)
      const refresh = yield* form(baseUrl, "/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token!,
        client_id: clientId
      })
      expect(bodyAs(refresh, OAuthErrorBody).error).toBe("invalid_grant")
      const unknown = yield* form(baseUrl, "/revoke", { token: "oat_unknown", client_id: clientId })
      expect(unknown.status).toBe(200)
    }))

  it.scoped("the account page disconnects an application: its tokens stop working", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const flow = yield* connectWithOAuth({ user, clientMetadata: metadata({ client_name: "To disconnect" }) })
      const tokens = yield* finish(flow)
      expect(yield* mcpStatus(baseUrl, tokens.access_token)).toBe(200)
      const account = yield* Effect.promise(() => flow.browser.open("/account"))
      const csrf = /name="csrf" value="([^"]+)"/.exec(account.html)![1]!
      // without the CSRF token the post is refused
      const forged = yield* Effect.promise(() =>
        flow.browser.open("/account/clients/revoke", { client_id: flow.provider.client!.client_id })
      )
      expect(forged.status).toBe(403)
      expect(yield* mcpStatus(baseUrl, tokens.access_token)).toBe(200)
      const after = yield* Effect.promise(() =>
        flow.browser.open("/account/clients/revoke", { csrf, client_id: flow.provider.client!.client_id })
      )
      expect(after.status).toBe(200)
      expect(after.html).not.toContain("To disconnect")
      expect(yield* mcpStatus(baseUrl, tokens.access_token)).toBe(401)
      const refresh = yield* form(baseUrl, "/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token!,
        client_id: flow.provider.client!.client_id
      })
      expect(bodyAs(refresh, OAuthErrorBody).error).toBe("invalid_grant")
    }))

  it.effect("registration validates redirect URIs and metadata, and is rate-limited per address", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const address = "127.0.0.9"
      const bad = yield* registerFrom(baseUrl, address, { redirect_uris: ["http://example.com/callback"] })
      expect(bad.status).toBe(400)
      expect(Schema.decodeUnknownSync(OAuthErrorBody)(bad.body).error).toBe("invalid_redirect_uri")
      const fragment = yield* registerFrom(baseUrl, address, { redirect_uris: ["https://app.example/cb#x"] })
      expect(Schema.decodeUnknownSync(OAuthErrorBody)(fragment.body).error).toBe("invalid_redirect_uri")
      const none = yield* registerFrom(baseUrl, address, { client_name: "no uris" })
      expect(none.status).toBe(400)
      const badMethod = yield* registerFrom(baseUrl, address, {
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: "private_key_jwt"
      })
      expect(Schema.decodeUnknownSync(OAuthErrorBody)(badMethod.body).error).toBe("invalid_client_metadata")
      const https = yield* registerFrom(baseUrl, address, {
        redirect_uris: ["https://app.example/cb", "http://localhost:8976/cb"]
      })
      expect(https.status).toBe(201)
      const confidential = Schema.decodeUnknownSync(ClientRegistrationResponse)(https.body)
      expect(confidential.token_endpoint_auth_method).toBe("client_secret_basic")
      expect(confidential.client_secret).toMatch(/^mcs_/)

      let limited: { status: number; headers: Http.IncomingHttpHeaders; body: unknown } | undefined
      for (let i = 0; i < 30 && limited === undefined; i++) {
        const r = yield* registerFrom(baseUrl, address, {
          redirect_uris: [REDIRECT],
          token_endpoint_auth_method: "none"
        })
        if (r.status === 429) limited = r
        else expect(r.status).toBe(201)
      }
      expect(Schema.decodeUnknownSync(OAuthErrorBody)(limited?.body).error).toBe("too_many_requests")
      expect(Number(limited?.headers["retry-after"])).toBeGreaterThan(0)
      // another address is not affected
      const elsewhere = yield* registerFrom(baseUrl, "127.0.0.10", {
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: "none"
      })
      expect(elsewhere.status).toBe(201)
    }))

  it.effect("a wrong password or a missing CSRF token on the sign-in form is refused", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const browser = new ScriptedBrowser(baseUrl)
      const page = yield* Effect.promise(() => browser.open("/account"))
      expect(new URL(page.url).pathname).toBe("/account/sign-in")
      const csrf = /name="csrf" value="([^"]+)"/.exec(page.html)![1]!
      const wrong = yield* Effect.promise(() =>
        browser.open("/account/sign-in", { csrf, return_to: "/account", email: user.email, password: "nope" })
      )
      expect(wrong.status).toBe(401)
      expect(wrong.html).toContain("The email or password is incorrect.")
      expect(browser.cookies.get("parley_session")).toBeUndefined()
      const forged = yield* Effect.promise(() =>
        browser.open("/account/sign-in", { return_to: "/account", email: user.email, password: PASSWORD })
      )
      expect(forged.status).toBe(403)
      expect(browser.cookies.get("parley_session")).toBeUndefined()
      const csrf2 = /name="csrf" value="([^"]+)"/.exec(forged.html)![1]!
      // an off-site return_to is ignored
      const ok = yield* Effect.promise(() =>
        browser.open("/account/sign-in", {
          csrf: csrf2,
          return_to: "//attacker.example/x",
          email: user.email,
          password: PASSWORD
        })
      )
      expect(ok.status).toBe(200)
      expect(new URL(ok.url).pathname).toBe("/account")
      expect(ok.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(ok.html).toContain(user.email)
    }))
})
