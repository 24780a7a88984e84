/**
 * Typed bodies from the contract. A test names the endpoint it called (`"pipelines.create"`); `ok` checks
 * that the request it made is that endpoint's route, decodes the whole envelope with the endpoint's success
 * schema (so a body the contract does not describe fails the test), and hands back the wire's `data` typed
 * as the contract's. The wire value itself is returned, not the decoded one: a field the contract does not
 * name is still there for a test to see (a secret that must not be sent, say).
 */
import type { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { HttpApi, HttpApiSchema } from "@effect/platform"
import { expect } from "@effect/vitest"
import { Api, ValidationIssue, type WithWarning } from "@parley/domain"
import { Schema } from "effect"

type Groups = typeof Api extends { readonly groups: Record<string, infer G> } ? G : never
type KeysOf<G> = G extends { readonly identifier: infer N extends string } ?
  EndpointKeys<N, HttpApiGroup.HttpApiGroup.Endpoints<G>>
  : never
type EndpointKeys<N extends string, E> = E extends { readonly name: infer EN extends string } ? `${N}.${EN}` : never

/** `group.endpoint`, as the contract names them: `"pipelines.create"`, `"opportunities.list"`. */
export type EndpointKey = KeysOf<Groups>

type EndpointOf<K extends EndpointKey> = K extends `${infer G}.${infer E}`
  ? HttpApiEndpoint.HttpApiEndpoint.WithName<HttpApiGroup.HttpApiGroup.EndpointsWithName<Groups, G>, E>
  : never

type Unwarned<A> = A extends WithWarning<infer D> ? D : A

/** The `data` an endpoint answers with on success, as the contract types it. */
export type Success<K extends EndpointKey> = Unwarned<HttpApiEndpoint.HttpApiEndpoint.Success<EndpointOf<K>>>

/** A response as the tests see it: the status, the parsed body, and what was asked. */
export interface ApiResponse {
  readonly status: number
  readonly body: unknown
  readonly headers: Headers
  readonly method: string
  readonly url: string
}

interface Route {
  readonly key: string
  readonly method: string
  readonly pattern: RegExp
  readonly literals: number
  readonly status: number
  readonly success: Schema.Schema<unknown, unknown>
}

const routes: ReadonlyArray<Route> = (() => {
  const all: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      const segments = endpoint.path.split("/").filter((s) => s.length > 0)
      const source = segments.map((s) => (s.startsWith(":") ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      all.push({
        key: `${group.identifier}.${endpoint.name}`,
        method: endpoint.method,
        pattern: new RegExp(`^/${source.join("/")}/?$`),
        literals: segments.filter((s) => !s.startsWith(":")).length,
        status: HttpApiSchema.getStatusSuccess(endpoint.successSchema),
        success: endpoint.successSchema as Schema.Schema<unknown, unknown>
      })
    }
  })
  return all
})()

/** The endpoint a request reached: of the routes matching its method and path, the most literal one. */
export const routeOf = (method: string, url: string): string | undefined => {
  const path = new URL(url, "http://localhost").pathname
  const matching = routes.filter((r) => r.method === method.toUpperCase() && r.pattern.test(path))
  return matching.sort((a, b) => b.literals - a.literals)[0]?.key
}

const byKey = new Map(routes.map((r) => [r.key, r]))

const ErrorEnvelope = Schema.Struct({
  status: Schema.Literal(false),
  code: Schema.Int,
  validation: Schema.Array(ValidationIssue),
  message: Schema.String,
  data: Schema.Null
})

/** A failure's envelope (SPEC.md 2.1), decoded: the status, message and named fields a test reads. */
export type Failure = typeof ErrorEnvelope.Type

/**
 * Success from endpoint `key` (its status: 200, or 201 for a publish): the request must have reached that
 * endpoint, and the body must be its success envelope. Returns `data` as sent.
 */
export const ok = <K extends EndpointKey>(r: ApiResponse, key: K): Success<K> => {
  const route = byKey.get(key)!
  if (r.status !== route.status) expect(r.body).toBe(`a ${route.status} answer from ${key}`)
  expect(r.body).toMatchObject({ status: true, code: route.status })
  expect(routeOf(r.method, r.url), `${r.method} ${r.url}`).toBe(key)
  const decoded = Schema.decodeUnknownEither(route.success)(r.body)
  if (decoded._tag === "Left") expect.fail(`${key} answered outside its contract: ${decoded.left.message}`)
  return (r.body as { readonly data: Success<K> }).data
}

/** A failure's envelope, checked against SPEC.md 2.1's shape. */
export const failure = (r: ApiResponse): Failure => {
  expect(r.status).toBeGreaterThanOrEqual(400)
  const decoded = Schema.decodeUnknownEither(ErrorEnvelope)(r.body)
  if (decoded._tag === "Left") expect.fail(`not an error envelope: ${decoded.left.message}`)
  return decoded.right
}

/**
 * A body outside the HttpApi contract (the receiver, OAuth, the widget's pages), decoded with the schema
 * that describes it: the test reads typed fields and fails on a body of another shape.
 */
export const bodyAs = <A, I>(r: ApiResponse, schema: Schema.Schema<A, I>): A => {
  const decoded = Schema.decodeUnknownEither(schema)(r.body)
  if (decoded._tag === "Left") expect.fail(`${r.method} ${r.url} answered ${r.status}: ${decoded.left.message}`)
  return decoded.right
}
