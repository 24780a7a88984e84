/**
 * OAuth's `/authorize` (SPEC.md 5.2) as the account pages serve it: a checked request from a signed-in user gets
 * the consent page, whose form approves or denies; without a session it goes to sign-in first and comes back.
 * A refused request is an error page (never a redirect), a bad one goes back to the client.
 */
import { HttpLayerRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { formOf, issuerOf } from "../http/Forms.js"
import { NO_STORE } from "../oauth/Http.js"
import { OAuth } from "../oauth/OAuth.js"
import type { AuthorizeRequest } from "../oauth/OAuthRequests.js"
import { currentSession, signInRedirect } from "./Http.js"
import { consentPage, errorPage } from "./Pages.js"
import { Sessions } from "./Sessions.js"

/** The request checked; a refused one is an error page (never a redirect), a bad one goes back to the client. */
const checked = (
  params: Readonly<Record<string, string | undefined>>,
  issuer: string,
  onValid: (request: AuthorizeRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, Sessions | OAuth>,
  redirectStatus: number
) =>
  Effect.flatMap(OAuth, (oauth) => oauth.checkAuthorizeRequest(params, issuer)).pipe(
    Effect.matchEffect({
      onFailure: (e) =>
        e._tag === "AuthorizeRefused"
          ? errorPage("Cannot authorize this application", e.message, 400)
          : Effect.succeed(HttpServerResponse.redirect(e.redirectTo, { status: redirectStatus, headers: NO_STORE })),
      onSuccess: onValid
    })
  )

export const AuthorizeRoutes = HttpLayerRouter.addAll([
  HttpLayerRouter.route("GET", "/authorize", (request) =>
    Effect.gen(function*() {
      const url = new URL(request.url, "http://localhost")
      const params = Object.fromEntries(url.searchParams)
      const issuer = yield* issuerOf(request)
      return yield* checked(params, issuer, (authorizeRequest) =>
        Effect.gen(function*() {
          const session = yield* currentSession(request)
          if (Option.isNone(session)) return signInRedirect(`${url.pathname}${url.search}`)
          return yield* consentPage(authorizeRequest, session.value)
        }), 302)
    })),

  HttpLayerRouter.route("POST", "/authorize", (request) =>
    Effect.gen(function*() {
      const form = yield* formOf(request)
      const params = form.record()
      const issuer = yield* issuerOf(request)
      return yield* checked(params, issuer, (authorizeRequest) =>
        Effect.gen(function*() {
          const oauth = yield* OAuth
          const sessions = yield* Sessions
          const session = yield* currentSession(request)
          if (Option.isNone(session)) {
            return signInRedirect(`/authorize?${new URLSearchParams(authorizeRequest.params).toString()}`)
          }
          if (!sessions.checkCsrf(session.value, params.csrf)) {
            return yield* errorPage(
              "Form expired",
              "This form expired or did not come from Parley. Start the connection again from your application.",
              403
            )
          }
          const location = params.decision === "approve"
            ? yield* oauth.approve(authorizeRequest, session.value.userId, issuer, form.all("grant"))
            : oauth.deny(authorizeRequest, issuer)
          return HttpServerResponse.redirect(location, { status: 303, headers: NO_STORE })
        }), 303)
    }))
])
