/**
 * The account pages (`/account`): sign in and out, personal access tokens (created with chosen scopes and
 * shown once, listed, revoked) and the OAuth applications connected to the account (disconnected).
 * Forms post back with a CSRF token; the session is an httpOnly, SameSite=Lax cookie.
 */
import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { TokenId } from "@parley/domain"
import { Effect, Layer, Option, Schema } from "effect"
import { AppSecret } from "../config/AppSecret.js"
import { formOf, issuerOf, remoteAddress } from "../http/Forms.js"
import { Identity } from "../identity/Identity.js"
import { OAuth } from "../oauth/OAuth.js"
import { accountPage, errorPage, signInPage } from "./Pages.js"
import { LOGIN_COOKIE, type Session, SESSION_COOKIE, SESSION_TTL_MS, Sessions, TooManyAttempts } from "./Sessions.js"

const FLASH_COOKIE = "parley_new_token"

/** Cookies of the account pages: never readable by scripts, Secure when the public URL is https. */
export const cookieOptions = (issuer: string, path = "/") => ({
  httpOnly: true,
  sameSite: "lax" as const,
  secure: issuer.startsWith("https:"),
  path
})

export const currentSession = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(Sessions, (sessions) => sessions.current(request.cookies[SESSION_COOKIE]))

const THIS_ORIGIN = "http://parley.invalid"

/**
 * Where to go after sign-in: only a path of this origin, as the URL parser (a browser's rules) reads it, so
 * `//host`, `/\host` and `/<TAB>/host` (tabs and newlines are dropped before parsing) cannot lead elsewhere.
 */
export const safeReturnTo = (value: string | undefined) => {
  if (value === undefined || !value.startsWith("/")) return "/account"
  const url = URL.canParse(value, THIS_ORIGIN) ? new URL(value, THIS_ORIGIN) : undefined
  return url?.origin === THIS_ORIGIN ? `${url.pathname}${url.search}${url.hash}` : "/account"
}

export const signInRedirect = (returnTo: string) =>
  HttpServerResponse.redirect(`/account/sign-in?return_to=${encodeURIComponent(returnTo)}`, { status: 303 })

const seeOther = (location: string) => HttpServerResponse.redirect(location, { status: 303 })

/** The sign-in form with a fresh login nonce cookie its CSRF token is bound to. */
const renderSignIn = (
  request: HttpServerRequest.HttpServerRequest,
  input: { returnTo: string; email?: string; error?: string; status?: number }
) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const issuer = yield* issuerOf(request)
    const nonce = sessions.newLoginNonce()
    return signInPage({ ...input, csrf: sessions.loginCsrf(nonce) }).pipe(
      HttpServerResponse.unsafeSetCookie(LOGIN_COOKIE, nonce, {
        ...cookieOptions(issuer, "/account"),
        maxAge: "1 hour"
      })
    )
  })

/** A signed-in page or form post: the session, and for posts a valid CSRF token; otherwise sign in first. */
const withSession = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  handle: (
    session: Session,
    form: Effect.Effect.Success<ReturnType<typeof formOf>>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  Effect.gen(function*() {
    const session = yield* currentSession(request)
    if (Option.isNone(session)) return signInRedirect("/account")
    const form = yield* formOf(request)
    if (request.method === "POST" && !(yield* Sessions).checkCsrf(session.value, form.first("csrf"))) {
      return yield* errorPage(
        "Form expired",
        "This form expired or did not come from Parley. Reload the page and try again.",
        403
      )
    }
    return yield* handle(session.value, form)
  })

const renderAccount = (
  session: Session,
  extra: { newToken?: { name: string; token: string }; error?: string; status?: number } = {}
) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    const oauth = yield* OAuth
    const tokens = yield* identity.personalTokens(session.userId)
    const clients = yield* oauth.connectedClients(session.userId)
    return yield* accountPage({ session, tokens, clients, ...extra })
  })

const ExpiresInDays = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 3650))

const routes = HttpLayerRouter.addAll([
  HttpLayerRouter.route("GET", "/account", (request) =>
    withSession(request, (session) =>
      Effect.gen(function*() {
        const secret = yield* AppSecret
        const issuer = yield* issuerOf(request)
        // the token created by the last post, sealed in a cookie that this one page view consumes
        const sealed = request.cookies[FLASH_COOKIE]
        const newToken = sealed === undefined || sealed === "" ? undefined : Option.getOrUndefined(
          Option.liftThrowable(() =>
            JSON.parse(secret.decrypt(sealed)) as { name: string; token: string; user: number }
          )()
        )
        const response = yield* renderAccount(
          session,
          newToken !== undefined && newToken.user === session.userId ? { newToken } : {}
        )
        return sealed === undefined
          ? response
          : HttpServerResponse.expireCookie(response, FLASH_COOKIE, cookieOptions(issuer, "/account"))
      }))),

  HttpLayerRouter.route("GET", "/account/sign-in", (request) =>
    Effect.gen(function*() {
      const returnTo = safeReturnTo(new URL(request.url, "http://localhost").searchParams.get("return_to") ?? undefined)
      if (Option.isSome(yield* currentSession(request))) return seeOther(returnTo)
      return yield* renderSignIn(request, { returnTo })
    })),

  HttpLayerRouter.route("POST", "/account/sign-in", (request) =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const issuer = yield* issuerOf(request)
      const form = yield* formOf(request)
      const returnTo = safeReturnTo(form.first("return_to"))
      const email = form.first("email") ?? ""
      if (!sessions.checkLoginCsrf(request.cookies[LOGIN_COOKIE], form.first("csrf"))) {
        return yield* renderSignIn(request, {
          returnTo,
          email,
          error: "The sign-in form expired. Please try again.",
          status: 403
        })
      }
      const signedIn = yield* sessions.signIn(email, form.first("password") ?? "", remoteAddress(request)).pipe(
        Effect.catchTag("TooManyAttempts", (e: TooManyAttempts) => Effect.succeed(e))
      )
      if (signedIn instanceof TooManyAttempts) {
        return yield* renderSignIn(request, {
          returnTo,
          email,
          error: `Too many failed attempts. Try again in ${Math.ceil(signedIn.retryAfter / 60)} minutes.`,
          status: 429
        })
      }
      if (Option.isNone(signedIn)) {
        return yield* renderSignIn(request, {
          returnTo,
          email,
          error: "The email or password is incorrect.",
          status: 401
        })
      }
      return seeOther(returnTo).pipe(
        HttpServerResponse.unsafeSetCookie(SESSION_COOKIE, signedIn.value, {
          ...cookieOptions(issuer),
          maxAge: `${SESSION_TTL_MS} millis`
        }),
        HttpServerResponse.expireCookie(LOGIN_COOKIE, cookieOptions(issuer, "/account"))
      )
    })),

  HttpLayerRouter.route("POST", "/account/sign-out", (request) =>
    withSession(request, () =>
      Effect.gen(function*() {
        const issuer = yield* issuerOf(request)
        yield* (yield* Sessions).signOut(request.cookies[SESSION_COOKIE]!)
        return seeOther("/account/sign-in").pipe(HttpServerResponse.expireCookie(SESSION_COOKIE, cookieOptions(issuer)))
      }))),

  HttpLayerRouter.route(
    "POST",
    "/account/tokens",
    (request) =>
      withSession(request, (session, form) =>
        Effect.gen(function*() {
          const identity = yield* Identity
          const secret = yield* AppSecret
          const issuer = yield* issuerOf(request)
          const name = (form.first("name") ?? "").trim()
          const scopes = form.all("scope")
          const days = form.first("expires_in_days") ?? ""
          const invalid = (error: string) => renderAccount(session, { error, status: 422 })
          if (name.length === 0 || name.length > 100) {
            return yield* invalid("Give the token a name of 1 to 100 characters.")
          }
          if (scopes.length === 0) return yield* invalid("Choose at least one scope.")
          const expiresInDays = days === "" ? Option.some(undefined) : Schema.decodeUnknownOption(ExpiresInDays)(days)
          if (Option.isNone(expiresInDays)) {
            return yield* invalid("The expiry must be a whole number of days from 1 to 3650.")
          }
          const created = yield* identity.createToken({
            email: session.email,
            name,
            scopes,
            expiresInDays: expiresInDays.value
          }).pipe(
            Effect.either
          )
          if (created._tag === "Left") return yield* invalid(created.left.message)
          // post/redirect/get: the token travels once, encrypted, to the page that shows it and drops it
          const sealed = secret.encrypt(JSON.stringify({ name, token: created.right.token, user: session.userId }))
          return seeOther("/account#new-token").pipe(
            HttpServerResponse.unsafeSetCookie(FLASH_COOKIE, sealed, {
              ...cookieOptions(issuer, "/account"),
              maxAge: "2 minutes"
            })
          )
        }))
  ),

  HttpLayerRouter.route(
    "POST",
    "/account/tokens/revoke",
    (request) =>
      withSession(request, (session, form) =>
        Effect.gen(function*() {
          const id = Schema.decodeUnknownOption(Schema.compose(Schema.NumberFromString, TokenId))(form.first("id"))
          if (Option.isSome(id)) yield* (yield* Identity).revokePersonalToken(session.userId, id.value)
          return seeOther("/account")
        }))
  ),

  HttpLayerRouter.route(
    "POST",
    "/account/clients/revoke",
    (request) =>
      withSession(request, (session, form) =>
        Effect.gen(function*() {
          const clientId = form.first("client_id")
          if (clientId !== undefined) yield* (yield* OAuth).disconnect(session.userId, clientId)
          return seeOther("/account")
        }))
  )
])

export const AccountRoutes = Layer.mergeAll(routes)
