/**
 * OAuth 2.1 for MCP clients (SPEC.md 5.2): the documents and payloads of discovery (RFC 9728, RFC 8414),
 * dynamic client registration (RFC 7591) and the token endpoint (RFC 6749 5.1, 5.2).
 */
import { Schema } from "effect"
import { maxChars } from "./Schemas.js"

export const TokenEndpointAuthMethod = Schema.Literal("none", "client_secret_post", "client_secret_basic")
export type TokenEndpointAuthMethod = typeof TokenEndpointAuthMethod.Type

export const OAuthGrantType = Schema.Literal("authorization_code", "refresh_token")
export type OAuthGrantType = typeof OAuthGrantType.Type

/** RFC 7591 2: what a client sends to `/register`. Other metadata (logo, contacts, ...) is ignored. */
export const ClientRegistrationRequest = Schema.Struct({
  redirect_uris: Schema.Array(Schema.String.pipe(maxChars(2000))).pipe(Schema.minItems(1), Schema.maxItems(10)),
  client_name: Schema.optional(Schema.String.pipe(maxChars(200))),
  client_uri: Schema.optional(Schema.String.pipe(maxChars(2000))),
  token_endpoint_auth_method: Schema.optional(TokenEndpointAuthMethod),
  grant_types: Schema.optional(Schema.Array(OAuthGrantType).pipe(Schema.minItems(1))),
  response_types: Schema.optional(Schema.Array(Schema.Literal("code")).pipe(Schema.minItems(1))),
  scope: Schema.optional(Schema.String.pipe(maxChars(1000)))
})
export type ClientRegistrationRequest = typeof ClientRegistrationRequest.Type

/** RFC 7591 3.2.1: the registered client, its secret only for confidential clients and only here. */
export const ClientRegistrationResponse = Schema.Struct({
  client_id: Schema.String,
  client_id_issued_at: Schema.Number,
  client_secret: Schema.optional(Schema.String),
  client_secret_expires_at: Schema.optional(Schema.Number),
  client_name: Schema.optional(Schema.String),
  client_uri: Schema.optional(Schema.String),
  redirect_uris: Schema.Array(Schema.String),
  grant_types: Schema.Array(OAuthGrantType),
  response_types: Schema.Array(Schema.Literal("code")),
  token_endpoint_auth_method: TokenEndpointAuthMethod,
  scope: Schema.optional(Schema.String)
})
export type ClientRegistrationResponse = typeof ClientRegistrationResponse.Type

/** RFC 6749 5.1. */
export const OAuthTokenResponse = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.Literal("Bearer"),
  expires_in: Schema.Number,
  refresh_token: Schema.optional(Schema.String),
  scope: Schema.String
})
export type OAuthTokenResponse = typeof OAuthTokenResponse.Type

/** RFC 6749 5.2 and RFC 7591 3.2.2 error codes this server answers with. */
export const OAuthErrorCode = Schema.Literal(
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "unsupported_token_type",
  "invalid_scope",
  "invalid_target",
  "invalid_redirect_uri",
  "invalid_client_metadata",
  "access_denied",
  "unsupported_response_type",
  "too_many_requests"
)
export type OAuthErrorCode = typeof OAuthErrorCode.Type

export const OAuthErrorBody = Schema.Struct({
  error: OAuthErrorCode,
  error_description: Schema.optional(Schema.String)
})
export type OAuthErrorBody = typeof OAuthErrorBody.Type

/** RFC 9728 2. */
export const ProtectedResourceMetadata = Schema.Struct({
  resource: Schema.String,
  authorization_servers: Schema.Array(Schema.String),
  scopes_supported: Schema.Array(Schema.String),
  bearer_methods_supported: Schema.Array(Schema.String),
  resource_name: Schema.String,
  resource_documentation: Schema.optional(Schema.String)
})
export type ProtectedResourceMetadata = typeof ProtectedResourceMetadata.Type

/** RFC 8414 2. */
export const AuthorizationServerMetadata = Schema.Struct({
  issuer: Schema.String,
  authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
  registration_endpoint: Schema.String,
  revocation_endpoint: Schema.String,
  scopes_supported: Schema.Array(Schema.String),
  response_types_supported: Schema.Array(Schema.String),
  response_modes_supported: Schema.Array(Schema.String),
  grant_types_supported: Schema.Array(OAuthGrantType),
  code_challenge_methods_supported: Schema.Array(Schema.String),
  token_endpoint_auth_methods_supported: Schema.Array(TokenEndpointAuthMethod),
  revocation_endpoint_auth_methods_supported: Schema.Array(TokenEndpointAuthMethod),
  authorization_response_iss_parameter_supported: Schema.Boolean
})
export type AuthorizationServerMetadata = typeof AuthorizationServerMetadata.Type
