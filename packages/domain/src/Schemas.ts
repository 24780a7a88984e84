/** Small reusable field schemas with the messages a client developer wants to read. */
import { ParseResult, Schema } from "effect"

export const all = { parseOptions: { errors: "all" as const, onExcessProperty: "ignore" as const } }

/** How many characters (Unicode code points) a string holds: an emoji is one, not two UTF-16 units. */
export const charCount = (s: string) => {
  let n = s.length
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        n--
        i++
      }
    }
  }
  return n
}

/**
 * At most `max` characters, counted in code points as SPEC.md counts them (`Schema.maxLength` counts UTF-16
 * units, so 9,999 letters and an emoji were "over 10,000"). JSON Schema's maxLength counts code points too.
 */
export const maxChars =
  <S extends Schema.Schema.Any>(max: number, annotations?: Schema.Annotations.Filter<Schema.Schema.Type<S>>) =>
  <A extends string>(
    self: S & Schema.Schema<A, Schema.Schema.Encoded<S>, Schema.Schema.Context<S>>
  ): Schema.filter<S> =>
    self.pipe(
      Schema.filter((s: A) => s.length <= max || charCount(s) <= max, {
        schemaId: Schema.MaxLengthSchemaId,
        title: `maxLength(${max})`,
        description: `a string at most ${max} character(s) long`,
        jsonSchema: { maxLength: max },
        ...annotations
      })
    )

export const NonEmptyString = (max = 255) =>
  Schema.Trim.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    maxChars(max, { message: () => `may not be greater than ${max} characters` })
  ).annotations({
    // JSON Schema is written from the encoded side, where Trim is a bare string: the limits would be lost
    jsonSchema: { type: "string", minLength: 1, maxLength: max }
  })

export const Text = (max: number) =>
  Schema.String.pipe(maxChars(max, { message: () => `may not be greater than ${max} characters` }))

export const MinLength = (min: number, max = 10_000) =>
  Schema.String.pipe(
    Schema.minLength(min, { message: () => `must be at least ${min} characters` }),
    maxChars(max, { message: () => `may not be greater than ${max} characters` })
  )

/** The largest value of a Postgres `integer` column: counts, limits and orders are stored as such. */
export const INT4_MAX = 2_147_483_647

export const IntBetween = (min: number, max: number) =>
  Schema.Int.pipe(Schema.between(min, max, { message: () => `must be an integer between ${min} and ${max}` }))
    .annotations({
      jsonSchema: { type: "integer", minimum: min, maximum: max }
    })

/** At least `min`, and no more than an `integer` column holds. */
export const IntAtLeast = (min: number) =>
  Schema.Int.pipe(
    Schema.greaterThanOrEqualTo(min, { message: () => `must be an integer of at least ${min}` }),
    Schema.lessThanOrEqualTo(INT4_MAX, { message: () => `may not be greater than ${INT4_MAX}` })
  ).annotations({ jsonSchema: { type: "integer", minimum: min, maximum: INT4_MAX } })

/** A JSON number that is a real number: `1e400` parses as Infinity. */
export const FiniteNumber = Schema.Number.pipe(Schema.finite({ message: () => "must be a finite number" }))

/** Query-string integers (`?page=2`): decimal digits with an optional minus, nothing looser (`1e0`, `0x1`, ` 1`). */
export const IntFromQuery = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (s, _, ast) =>
    /^-?(0|[1-9][0-9]{0,15})$/.test(s) && Number.isSafeInteger(Number(s))
      ? ParseResult.succeed(Number(s))
      : ParseResult.fail(new ParseResult.Type(ast, s, "must be an integer")),
  encode: (n) => ParseResult.succeed(String(n))
}).annotations({ message: () => "must be an integer" })
/** `per_page` of a paginated list: 1 to 100. */
export const PerPage = Schema.compose(
  IntFromQuery,
  Schema.Int.pipe(Schema.between(1, 100, { message: () => "must be between 1 and 100" }))
)
/** `page` of a paginated list, from 1. */
export const PageNumber = Schema.compose(
  IntFromQuery,
  Schema.Int.pipe(Schema.between(1, INT4_MAX, { message: () => `must be between 1 and ${INT4_MAX}` }))
)

export const Timestamp = Schema.String.annotations({
  description: "ISO 8601 UTC timestamp with microseconds",
  examples: ["2026-11-21T10:00:00.123456Z"]
})
