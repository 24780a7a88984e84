import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Ok } from "../Envelope.js"
import { Me } from "../Identity.js"
import { Authenticated } from "./Auth.js"

export class AccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/api/user/me")
      .addSuccess(Ok(Me))
      .middleware(Authenticated)
      .annotate(OpenApi.Summary, "The authenticated user, the token's scopes and the workspaces it reaches")
  )
  .annotate(OpenApi.Title, "Account")
{}
