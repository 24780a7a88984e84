import { Schema } from "effect"

const Id = <B extends string>(brand: B) => Schema.Int.pipe(Schema.positive(), Schema.brand(brand))
/** Path parameters arrive as strings: `/pipelines/12`. */
const IdFromString = <S extends Schema.Schema<any, number, never>>(id: S) =>
  Schema.compose(Schema.NumberFromString, id).annotations({ message: () => "must be a positive integer id" })

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
export const AiModelId = Id("AiModelId")
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
