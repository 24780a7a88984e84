/** Small reusable field schemas with the messages a client developer wants to read. */
import { Schema } from "effect"

export const all = { parseOptions: { errors: "all" as const, onExcessProperty: "ignore" as const } }

export const NonEmptyString = (max = 255) =>
  Schema.Trim.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(max, { message: () => `may not be greater than ${max} characters` })
  )

export const Text = (max: number) =>
  Schema.String.pipe(Schema.maxLength(max, { message: () => `may not be greater than ${max} characters` }))

export const MinLength = (min: number, max = 10_000) =>
  Schema.String.pipe(
    Schema.minLength(min, { message: () => `must be at least ${min} characters` }),
    Schema.maxLength(max, { message: () => `may not be greater than ${max} characters` })
  )

export const IntBetween = (min: number, max: number) =>
  Schema.Int.pipe(Schema.between(min, max, { message: () => `must be an integer between ${min} and ${max}` }))

export const IntAtLeast = (min: number) =>
  Schema.Int.pipe(Schema.greaterThanOrEqualTo(min, { message: () => `must be an integer of at least ${min}` }))

/** Query-string integers (`?page=2`). */
export const IntFromQuery = Schema.NumberFromString.pipe(Schema.int({ message: () => "must be an integer" }))
/** `per_page` of a paginated list: 1 to 100. */
export const PerPage = Schema.compose(IntFromQuery, Schema.Int.pipe(Schema.between(1, 100, { message: () => "must be between 1 and 100" })))
/** `page` of a paginated list, from 1. */
export const PageNumber = Schema.compose(IntFromQuery, Schema.Int.pipe(Schema.greaterThanOrEqualTo(1, { message: () => "must be at least 1" })))

export const Timestamp = Schema.String.annotations({
  description: "ISO 8601 UTC timestamp with microseconds",
  examples: ["2026-11-21T10:00:00.123456Z"]
})
