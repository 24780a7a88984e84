/**
 * The `/api/user` response envelope of SPEC.md 2.1: `{status, code, validation, message, data}`.
 * Handlers return plain values and fail with plain tagged errors; these transforms put the envelope on
 * the wire (and in the OpenAPI document) so no handler builds one by hand.
 */
import { HttpApiError, HttpApiSchema, HttpServerError, Multipart } from "@effect/platform"
import { Predicate, Schema } from "effect"
import * as AST from "effect/SchemaAST"

export class ValidationIssue extends Schema.Class<ValidationIssue>("ValidationIssue")({
  field: Schema.String,
  message: Schema.String
}) {}

const envelope = <A, I, R>(data: Schema.Schema<A, I, R>) =>
  Schema.Struct({
    status: Schema.Boolean,
    code: Schema.Int,
    validation: Schema.Array(ValidationIssue),
    message: Schema.String,
    data
  })

const envelopeWithoutValidation = <A, I, R>(data: Schema.Schema<A, I, R>) =>
  Schema.Struct({ status: Schema.Boolean, code: Schema.Int, message: Schema.String, data })

export interface OkOptions {
  readonly status?: number
  readonly message?: string
  /** SPEC.md 2.1: a few responses (knowledge upsert and delete, conversation update) carry no `validation` */
  readonly withoutValidation?: boolean
}

/**
 * A transform from a struct to a class borrows the class's identifier in JSON Schema, so the envelope
 * of `Ok(Stage)` would be emitted as `Stage` with `data: {$ref: Stage}` (itself) and the real `Stage`
 * lost. The envelope gets its own name (`StageResponse`) whenever the payload has one.
 */
const envelopeIdentifier = (data: Schema.Schema.Any, suffix: string) => {
  const id = AST.getJSONIdentifier(Schema.typeSchema(data).ast)
  return id._tag === "Some" ? { identifier: `${id.value}${suffix}` } : {}
}

/** Success: the handler returns `A`; the wire format is the envelope with `data: A`. */
export const Ok = <A, I, R>(data: Schema.Schema<A, I, R>, options: OkOptions = {}) => {
  const status = options.status ?? 200
  const message = options.message ?? "OK"
  return options.withoutValidation === true
    ? Schema.transform(envelopeWithoutValidation(data), Schema.typeSchema(data), {
      strict: true,
      decode: (env) => env.data,
      encode: (a) => ({ status: true, code: status, message, data: a })
    }).annotations({
      ...HttpApiSchema.annotations({ status }),
      ...envelopeIdentifier(data, "ResponseWithoutValidation")
    })
    : Schema.transform(envelope(data), Schema.typeSchema(data), {
      strict: true,
      decode: (env) => env.data,
      encode: (a) => ({ status: true, code: status, validation: [], message, data: a })
    }).annotations({ ...HttpApiSchema.annotations({ status }), ...envelopeIdentifier(data, "Response") })
}

/** A saved resource and, when something about it needs the caller's attention, a warning sentence. */
export interface WithWarning<A> {
  readonly data: A
  readonly warning: string | null
}

/**
 * Success whose `message` may carry a warning: `"<message> Warning: <warning>"`. The envelope and status
 * are `Ok`'s (SPEC.md 2.1); only the text of `message` changes.
 */
export const OkWithWarning = <A, I, R>(data: Schema.Schema<A, I, R>, options: { readonly message: string }) => {
  const separator = " Warning: "
  return Schema.transform(
    envelope(data),
    Schema.Struct({ data: Schema.typeSchema(data), warning: Schema.NullOr(Schema.String) }),
    {
      strict: true,
      decode: (env) => {
        const at = env.message.indexOf(separator)
        return { data: env.data, warning: at < 0 ? null : env.message.slice(at + separator.length) }
      },
      encode: ({ data, warning }) => ({
        status: true,
        code: 200,
        validation: [],
        message: warning === null ? options.message : `${options.message}${separator}${warning}`,
        data
      })
    }
  ).annotations({ ...HttpApiSchema.annotations({ status: 200 }), ...envelopeIdentifier(data, "Response") })
}

const ErrorEnvelope = envelope(Schema.Null)
type ErrorEnvelope = typeof ErrorEnvelope.Type

/**
 * Error: the handler fails with a tagged error carrying `message` (and optionally `validation`);
 * the wire format is the envelope with `status: false` and `data: null`.
 */
export const ErrorResponse = <Self extends { readonly message: string }, I>(
  cls: Schema.Schema<Self, I, never> & { new(args: any): Self },
  status: number,
  identifier: string
) =>
  Schema.transform(ErrorEnvelope, Schema.typeSchema(cls), {
    strict: false,
    decode: (env) => new cls({ message: env.message, validation: env.validation }),
    encode: (e): ErrorEnvelope => ({
      status: false,
      code: status,
      validation: "validation" in e ? (e.validation as ReadonlyArray<ValidationIssue>) : [],
      message: e.message,
      data: null
    })
  }).annotations({ ...HttpApiSchema.annotations({ status }), identifier })

/**
 * A named error whose message is fixed (the 404s of SPEC.md): the wire is the error envelope with that message,
 * held as a literal so a client decoding the response learns which error it got.
 */
export const FixedErrorResponse = <Self extends { readonly message: string }, I>(
  cls: Schema.Schema<Self, I, never> & { new(args: void): Self },
  status: number,
  identifier: string,
  message: string
) =>
  Schema.transform(
    Schema.Struct({
      status: Schema.Literal(false),
      code: Schema.Literal(status),
      validation: Schema.Array(ValidationIssue),
      message: Schema.Literal(message),
      data: Schema.Null
    }),
    Schema.typeSchema(cls),
    {
      strict: false,
      decode: () => new cls(),
      encode: () => ({ status: false, code: status, validation: [], message, data: null }) as const
    }
  ).annotations({ ...HttpApiSchema.annotations({ status }), identifier })

/** `contact.email`; array indices join the same way (`is_model_routing.2.tier`). */
export const fieldOf = (path: ReadonlyArray<PropertyKey>): string => path.map(String).join(".")

/**
 * `must be ...` becomes `The name field must be ...`; Effect's `Expected <type>, actual <value>` is said the
 * same way (`must be a list of strings`, `must be one of "a", "b" or "c"`) where its type is one a client
 * sends (a list, an object, a string, a number, true or false, a choice of values), and kept otherwise.
 */
export const humanise = (field: string, message: string): string => {
  const subject = field === "" ? "The request body" : `The ${field} field`
  if (message === "is missing") return `${subject} is required.`
  if (message.startsWith("is unexpected")) return `${subject} is not allowed.`
  if (/^(must|may|is) /.test(message)) return `${subject} ${message}${message.endsWith(".") ? "" : "."}`
  const expected = literalExpectation.exec(message)?.[1]?.replace(/ \| undefined$/, "")
  const said = expected === undefined ? undefined : expectedInWords(expected)
  if (said !== undefined) return `${subject} must be ${said}.`
  return message.replace(/ \| undefined(?=, actual)/, "")
}

const STRING_TYPES = /^(string|Trim|maxLength\(\d+\)|minLength\(\d+\)|NonEmptyString|a string .*)$/

/** What Effect's name of a type means to a client sending JSON, or undefined when it has no plain name. */
const expectedInWords = (type: string): string | undefined => {
  const nullable = type.endsWith(" | null")
  const core = nullable ? type.slice(0, -" | null".length) : type
  const orNull = nullable ? " or null" : ""
  const list = /^ReadonlyArray<(.+)>$/s.exec(core)
  if (list !== null) {
    const item = list[1]!
    const items = item.split(" & ").every((part) => STRING_TYPES.test(part))
      ? " of strings"
      : item === "number" || item === "Int"
      ? " of numbers"
      : ""
    return `a list${items}${orNull}`
  }
  if (core === "string" || STRING_TYPES.test(core)) return `a string${orNull}`
  if (core === "number" || core === "Int" || core === "NumberFromString") return `a number${orNull}`
  if (core === "boolean") return `true or false${orNull}`
  if (core.startsWith("{ ") || core.startsWith("Record<") || core === "object") return `an object${orNull}`
  const choices = core.split(" | ")
  if (choices.length > 1 && choices.every((c) => /^"[^"]*"$/.test(c))) {
    return `one of ${choices.slice(0, -1).join(", ")} or ${choices[choices.length - 1]}${orNull}`
  }
  return undefined
}

/** Laravel's summary: the first message, and how many more there are. */
export const summarise = (validation: ReadonlyArray<ValidationIssue>): string => {
  const first = validation[0]?.message ?? "The given data was invalid."
  const more = validation.length - 1
  return more > 0 ? `${first} (and ${more} more error${more > 1 ? "s" : ""})` : first
}

const literalExpectation = /^Expected (.+), actual (.+)$/s
const absentExpectation = /^Expected (undefined|null), actual /

const isBelow = (path: ReadonlyArray<PropertyKey>, parent: ReadonlyArray<PropertyKey>) =>
  path.length > parent.length && parent.every((p, i) => String(p) === String(path[i]))

/**
 * One entry per field. A union reports one issue per member (`Expected "none", actual "x"`, ...):
 * those merge into `Expected "none" | "vector" | "hybrid", actual "x"`; otherwise the first issue wins.
 * When an optional or nullable array or struct fails inside (`is_model_routing.1.tier`), its `undefined`
 * and `null` members also report `Expected undefined, actual [...]` on the parent: that adds nothing, so
 * it is dropped.
 */
export const issuesToValidation = (
  issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>
): Array<ValidationIssue> => {
  const byField = new Map<string, Array<string>>()
  for (const issue of issues) {
    if (absentExpectation.test(issue.message) && issues.some((other) => isBelow(other.path, issue.path))) continue
    const field = fieldOf(issue.path)
    const messages = byField.get(field) ?? []
    if (!messages.includes(issue.message)) messages.push(issue.message)
    byField.set(field, messages)
  }
  return [...byField].map(([field, messages]) => {
    const parts = messages.map((m) => literalExpectation.exec(m))
    const merged = messages.length > 1 && parts.every((p) => p !== null && p[2] === parts[0]![2])
      ? `Expected ${parts.map((p) => p![1]).join(" | ")}, actual ${parts[0]![2]}`
      : messages[0]!
    return new ValidationIssue({ field, message: humanise(field, merged) })
  })
}

/**
 * Replaces the framework's 400 `HttpApiDecodeError` body with the 422 envelope naming every bad field.
 * The type side stays `HttpApiDecodeError` (what the builder fails with); only the wire side changes.
 */
export const ValidationErrorResponse = Schema.transform(
  ErrorEnvelope,
  Schema.typeSchema(HttpApiError.HttpApiDecodeError),
  {
    strict: false,
    decode: (env) =>
      new HttpApiError.HttpApiDecodeError({
        message: env.message,
        issues: env.validation.map((v) => ({ _tag: "Type" as const, path: v.field.split("."), message: v.message }))
      }),
    encode: (e): ErrorEnvelope => {
      const validation = issuesToValidation(e.issues)
      return {
        status: false,
        code: 422,
        validation,
        message: summarise(validation),
        data: null
      }
    }
  }
).annotations({ ...HttpApiSchema.annotations({ status: 422 }), identifier: "ValidationError" })

/** Malformed JSON (and other unreadable bodies) are `RequestError` defects; without this they are an empty 400. */
export const MalformedBodyResponse = Schema.transform(
  ErrorEnvelope,
  Schema.declare((u): u is HttpServerError.RequestError =>
    HttpServerError.isServerError(u) && u._tag === "RequestError"
  ),
  {
    strict: false,
    decode: (env) =>
      new HttpServerError.RequestError({ request: undefined as never, reason: "Decode", description: env.message }),
    encode: (): ErrorEnvelope => ({
      status: false,
      code: 400,
      validation: [],
      message: "The request body is not valid JSON.",
      data: null
    })
  }
).annotations({ ...HttpApiSchema.annotations({ status: 400 }), identifier: "MalformedBody" })

/** A plain error envelope body, for responses built outside the HttpApi (unknown routes, the receiver). */
export const errorBody = (code: number, message: string, validation: ReadonlyArray<ValidationIssue> = []) => ({
  status: false,
  code,
  validation,
  message,
  data: null
})

/**
 * HttpApi.make hard-codes `HttpApiDecodeError` as the API-level error schema and has no setter, so the
 * API object is rebuilt with the same prototype and that schema swapped (both runtime and OpenAPI change).
 */
export const replaceDecodeError = <A>(api: A, schema: Schema.Schema<HttpApiError.HttpApiDecodeError, any>): A => {
  const self = api as unknown as {
    errorSchema: Schema.Schema.Any
    groups: unknown
    annotations: unknown
    middlewares: unknown
  }
  const ast = self.errorSchema.ast
  const rest = AST.isUnion(ast) ? ast.types.filter((t) => t !== HttpApiError.HttpApiDecodeError.ast) : []
  function HttpApi() {}
  Object.setPrototypeOf(HttpApi, Object.getPrototypeOf(self))
  Object.assign(HttpApi, {
    groups: self.groups,
    errorSchema: Schema.make(AST.Union.make([schema.ast, ...rest])),
    annotations: self.annotations,
    middlewares: self.middlewares
  })
  return HttpApi as unknown as A
}

/**
 * A multipart body over its route's whole-body limit (the MaxBodySize the request guard sets, http/BodyLimits.ts),
 * as either parser words it: BodyTooLarge, or platform-node's InternalError wrapping a MaxTotalSize ReachedLimit.
 */
const isBodyOverLimit = (u: unknown): u is Multipart.MultipartError => {
  if (!Predicate.isTagged(u, "MultipartError")) return false
  const e = u as Multipart.MultipartError
  const cause = e.cause as { _tag?: string; limit?: string } | undefined
  return e.reason === "BodyTooLarge" || (cause?._tag === "ReachedLimit" && cause.limit === "MaxTotalSize")
}

/**
 * A multipart body over its route's limit without a Content-Length that announced it (a chunked upload): the 413 the
 * guard answers when the length is announced, found while the body streams, so nothing of it is stored.
 */
export const UploadTooLargeResponse = Schema.transform(ErrorEnvelope, Schema.declare(isBodyOverLimit), {
  strict: false,
  decode: (env) => new Multipart.MultipartError({ reason: "BodyTooLarge", cause: env.message }),
  encode: (): ErrorEnvelope => ({
    status: false,
    code: 413,
    validation: [],
    message: "The request body is larger than this endpoint accepts.",
    data: null
  })
}).annotations({ ...HttpApiSchema.annotations({ status: 413 }), identifier: "UploadTooLarge" })

/**
 * An upload over its limit fails while the body is read (a defect the builder raises), before any
 * handler runs: answered as the 422 SPEC.md 4.2 gives for "a file over 25 MB", naming `files`.
 * (With platform-node the per-file limit arrives as an InternalError wrapping a ReachedLimit.) A body over the
 * route's whole limit is UploadTooLargeResponse's 413.
 */
export const UploadRejectedResponse = Schema.transform(
  ErrorEnvelope,
  Schema.declare((u): u is Multipart.MultipartError => Predicate.isTagged(u, "MultipartError") && !isBodyOverLimit(u)),
  {
    strict: false,
    decode: (env) => new Multipart.MultipartError({ reason: "FileTooLarge", cause: env.message }),
    encode: (e): ErrorEnvelope => {
      const cause = e.cause as { _tag?: string } | undefined
      const tooLarge = e.reason === "FileTooLarge" || e.reason === "BodyTooLarge" || cause?._tag === "ReachedLimit"
      const message = tooLarge
        ? "The files field may not contain a file greater than 25 MB."
        : "The multipart body could not be read."
      return {
        status: false,
        code: 422,
        validation: [new ValidationIssue({ field: "files", message })],
        message,
        data: null
      }
    }
  }
).annotations({ ...HttpApiSchema.annotations({ status: 422 }), identifier: "UploadRejected" })
