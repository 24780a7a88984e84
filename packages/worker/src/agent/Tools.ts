/**
 * The tools the agent may call in a reply. Each only records what it would do; the turn applies it with
 * the stored reply (Agent.ts). Their names and descriptions are instructions: the output guard keeps
 * them out of what the contact reads (OutputGuard.ts).
 */
import { Tool, Toolkit } from "@effect/ai"
import { Schema } from "effect"

export const MoveToStage = Tool.make("move_to_stage", {
  description:
    "Move the opportunity to another stage of the pipeline when the conversation meets that stage's entry condition.",
  parameters: {
    stage_id: Schema.Number.annotations({ description: "The id of the stage, from the list of stages" }),
    reason: Schema.optional(Schema.String).annotations({
      description: "What the contact said that meets the condition"
    })
  },
  success: Schema.Struct({
    moved: Schema.Boolean,
    stage: Schema.optional(Schema.String),
    error: Schema.optional(Schema.String)
  })
})

/**
 * SPEC.md 4.5 create_action: `on_user_message` and `custom` actions are the model's to call; the call is recorded and
 * runs after the reply is stored.
 */
export const TriggerAction = Tool.make("trigger_action", {
  description:
    "Fire one of the pipeline's actions (an outbound webhook) when the conversation calls for it, as the action's instructions say.",
  parameters: {
    action_id: Schema.Number.annotations({ description: "The id of the action, from the list of actions" }),
    reason: Schema.optional(Schema.String).annotations({ description: "What in the conversation calls for the action" })
  },
  success: Schema.Struct({
    triggered: Schema.Boolean,
    action: Schema.optional(Schema.String),
    error: Schema.optional(Schema.String)
  })
})

/** docs/handoff.md: the agent asks for a person; the reply it writes is the contact's bridge message. */
export const RequestHuman = Tool.make("request_human", {
  description:
    "Ask for a member of the team to take over this conversation, when the contact asks for a person or the handoff instructions say so.",
  parameters: {
    reason: Schema.String.annotations({ description: "Why a person is needed, in a few words, for the team" })
  },
  success: Schema.Struct({ requested: Schema.Boolean, error: Schema.optional(Schema.String) })
})

export const AgentTools = Toolkit.make(MoveToStage, TriggerAction, RequestHuman)

/** Every text of the tools a model is shown: names, descriptions and their parameters' descriptions. */
const textsOf = (tool: typeof MoveToStage | typeof TriggerAction | typeof RequestHuman) => {
  const schema = Tool.getJsonSchema(tool as typeof MoveToStage) as {
    readonly properties?: Record<string, { readonly description?: string }>
  }
  return [tool.name, tool.description ?? "", ...Object.values(schema.properties ?? {}).map((p) => p.description ?? "")]
}

export const toolTexts: ReadonlyArray<string> = [MoveToStage, TriggerAction, RequestHuman].flatMap(textsOf)
