import { ParseResult, Schema } from "effect"

/** Ids are `bigint` identity columns; a JavaScript number holds them exactly up to 2^53 - 1. */
export const MAX_ID = Number.MAX_SAFE_INTEGER

const idMessage = () => "must be a positive integer id"

/** A positive integer id of one kind (`PipelineId`), as bodies carry it. */
export const Id = <B extends string>(brand: B) =>
  Schema.Int.pipe(Schema.between(1, MAX_ID, { message: idMessage }), Schema.brand(brand)).annotations({
    message: idMessage,
    // one self-contained schema (not a $ref to Int beside the bounds), so every reader of the document sees them
    jsonSchema: { type: "integer", minimum: 1, maximum: MAX_ID }
  })

/**
 * An id in a path or query string: `^[1-9][0-9]*$` within range, nothing looser. `Number(" 1")`, `1e0`,
 * `0x1`, `1.0`, `+1` and `01` all read as 1, which let a malformed id reach a real row.
 */
export const IdText = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (s, _, ast) =>
    /^[1-9][0-9]{0,15}$/.test(s) && Number(s) <= MAX_ID
      ? ParseResult.succeed(Number(s))
      : ParseResult.fail(new ParseResult.Type(ast, s, idMessage())),
  encode: (n) => ParseResult.succeed(String(n))
}).annotations({ message: idMessage })

/** Path parameters arrive as strings: `/pipelines/12`. */
export const IdFromString = <S extends Schema.Schema<any, number, never>>(id: S) =>
  Schema.compose(IdText, id).annotations({ message: idMessage })

export const UserId = Id("UserId")
export type UserId = typeof UserId.Type
export const WorkspaceId = Id("WorkspaceId")
export type WorkspaceId = typeof WorkspaceId.Type
export const TokenId = Id("TokenId")
export type TokenId = typeof TokenId.Type
export const PipelineId = Id("PipelineId")
export type PipelineId = typeof PipelineId.Type
export const PipelineIdFromString = IdFromString(PipelineId)
export const StageId = Id("StageId")
export type StageId = typeof StageId.Type
export const StageIdFromString = IdFromString(StageId)
export const ChannelId = Id("ChannelId")
export type ChannelId = typeof ChannelId.Type
export const ChannelIdFromString = IdFromString(ChannelId)
export const AiProviderId = Id("AiProviderId")
export type AiProviderId = typeof AiProviderId.Type
export const AiModelId = Id("AiModelId")
export type AiModelId = typeof AiModelId.Type
export const AgentTypeId = Id("AgentTypeId")
export const LanguageId = Id("LanguageId")
export const DialectId = Id("DialectId")
export const KnowledgeTableId = Id("KnowledgeTableId")
export type KnowledgeTableId = typeof KnowledgeTableId.Type
export const KnowledgeTableIdFromString = IdFromString(KnowledgeTableId)
export const VariableId = Id("VariableId")
export type VariableId = typeof VariableId.Type
export const VariableIdFromString = IdFromString(VariableId)
export const ActionId = Id("ActionId")
export type ActionId = typeof ActionId.Type
export const ActionIdFromString = IdFromString(ActionId)
