/** Building blocks of the tools' input schemas and summaries, shared by the catalogue's files. */
import { Schema } from "effect"

/** A field with a description a model reads when it decides what to send. */
export const required = <A, I>(schema: Schema.Schema<A, I, never>, description: string): Schema.Schema<A, I, never> =>
  schema.annotations({ description })
// on the schema, not the property: a refinement's own description ("a positive number") would win
export const optional = <A, I>(schema: Schema.Schema<A, I, never>, description: string) => Schema.optional(schema.annotations({ description }))
export const withDefault = <A, I>(schema: Schema.Schema<A, I, never>, value: A & I, description: string) =>
  Schema.optionalWith(schema.annotations({ default: value }), { default: () => value }).annotations({ description })

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`
