/**
 * Building blocks of the tools' input schemas. A description goes on the property, not on its schema:
 * Effect words a refinement's failure as "Expected <description>", which would print the description in
 * place of the argument's name.
 */
import { PipelineId, StageId } from "@parley/domain"
import { IntBetween } from "@parley/domain/Schemas"
import { Schema } from "effect"

/** A required argument with what it means. */
export const required = <A, I>(schema: Schema.Schema<A, I, never>, description: string) =>
  Schema.propertySignature(schema).annotations({ description })

export const optional = <A, I>(schema: Schema.Schema<A, I, never>, description: string) =>
  Schema.optional(schema).annotations({ description })

export const withDefault = <A, I>(schema: Schema.Schema<A, I, never>, value: A & I, description: string) =>
  Schema.optionalWith(schema, { default: () => value }).annotations({ description, default: value })

export const pipelineId = required(PipelineId, "From list_pipelines")
export const stageId = required(StageId, "From list_pipeline_stages")

/** `page` and `per_page` of a list the tool pages through itself. */
export const paging = (perPage: number, max = 100) => ({
  page: withDefault(IntBetween(1, 100_000), 1, "Page number"),
  per_page: withDefault(IntBetween(1, max), perPage, "Rows per page")
})

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`
