import { Context, type Effect, type Option } from "effect"
import type { MessageCitation } from "../Citations.js"
import type { NoReplyReason } from "../NoReply.js"
import type { RoutingTier } from "../Pipelines.js"
import type { TemplateSend } from "./ChannelProvider.js"
import type { FollowupOutcome } from "./FollowupSequences.js"

/** The newest unanswered contact message of a conversation, and how long to wait for more. */
export interface PendingTurn {
  /** The newest contact message not yet answered: the reply covers it and every earlier one. */
  readonly latestMessageId: string
  readonly latestAt: Date
  /** The pipeline's debounce window: a burst of messages within it gets one reply. */
  readonly debounceMs: number
  /**
   * The turn decided with the same read, when it was due by the database's clock and no reply was left to deliver
   * first: the entity takes it as it is. None: the entity waits out the window, or asks `prepare`.
   */
  readonly prepared: Option.Option<Prepared>
}

/** What a conversation has waiting when its entity gets an `Inbound`. */
export interface PendingWork {
  readonly turn: Option.Option<PendingTurn>
  /** replies stored but not delivered (a crash between storing and delivering): they go out first */
  readonly undelivered: ReadonlyArray<string>
}

/** What a model can do besides writing text (`ai_models.capabilities`, docs/agent.md "Models"). */
export type ModelCapability = "tools" | "vision" | "audio_input" | "embeddings" | "transcription"

/** A model of the catalogue (`ai_models` joined with its provider). */
export interface ModelRef {
  readonly id: number
  /** provider slug: `local`, `openai`, `anthropic`, or a managed provider's */
  readonly provider: string
  /** the provider's protocol: `local`, `openai`, `openai_compatible`, `anthropic`, `google` (absent: the slug) */
  readonly kind?: string
  /** the provider's row, and when it last changed (a changed key or URL builds a new client) */
  readonly providerId?: number
  readonly providerRevision?: string
  /** the provider's model name, e.g. `gpt-4.1-mini` */
  readonly model: string
  readonly inputPricePerMillion: number
  readonly outputPricePerMillion: number
  /** tokens the model reads at most (bounds what a contact's document adds to the prompt) */
  readonly contextWindow?: number
  readonly capabilities?: ReadonlyArray<ModelCapability>
  /** whether the provider's row holds a key (a seeded provider may take its key from the environment instead) */
  readonly hasKey?: boolean
  /** false: a workspace's own provider whose calls do not spend the workspace's credits */
  readonly chargeCredits?: boolean
}

/**
 * A file a message carries, as the model is given it: an image's bytes when the model sees images, else its
 * description; a voice note's transcript; a document's text (bounded). Each absent when not available.
 */
export interface TurnFile {
  readonly name: string
  readonly mimetype: string
  readonly type: "image" | "video" | "audio" | "document" | "file"
  /** image bytes, for a model with the `vision` capability */
  readonly data?: Uint8Array
  /** a one-line description of an image, written by the pipeline's `vision_model_id` */
  readonly description?: string
  /** a voice note's or audio file's transcript (`transcription_model_id`) */
  readonly transcript?: string
  /** a PDF's, DOCX's or text file's text, cut to what the model's context allows */
  readonly text?: string
}

export interface TurnStage {
  readonly id: number
  readonly name: string
  readonly nature: "neutral" | "won" | "lost"
  readonly persona: string | null
  readonly instructions: string | null
  readonly enterCondition: string | null
}

export interface TurnMessage {
  readonly role: "user" | "assistant"
  readonly text: string
  /** the message's files, as the model is given them (TurnFile) */
  readonly files?: ReadonlyArray<TurnFile>
}

/** An action the model may call (SPEC.md 4.5 create_action, `on_user_message` and `custom`). */
export interface TurnAction {
  readonly id: number
  readonly name: string
  readonly trigger: "on_user_message" | "custom"
  readonly description: string | null
  readonly instructions: string | null
  /** `from_ai` variables the action uses: each is answered by the model when the action is called */
  readonly aiVariables: ReadonlyArray<{ readonly name: string; readonly instruction: string }>
}

/** Everything a reply is made from, read in one go when the turn starts. */
export interface TurnContext {
  readonly conversationId: string
  readonly workspaceId: number
  readonly pipelineId: number
  readonly pipelineName: string
  readonly opportunityId: number | null
  readonly agentType: { readonly name: string; readonly description: string | null }
  readonly persona: string | null
  readonly instructions: string | null
  readonly language: string
  readonly dialect: string | null
  readonly temperature: number
  /** the opportunity's current stage */
  readonly stage: TurnStage | null
  /** every stage of the pipeline, in order */
  readonly stages: ReadonlyArray<TurnStage>
  readonly contact: {
    readonly name: string | null
    readonly email: string | null
    readonly phone: string | null
    readonly identifier: string | null
  }
  /** the opportunity's context object */
  readonly context: Readonly<Record<string, unknown>>
  /** the last `agent_memory_window` messages, oldest first, ending with the contact messages of this turn */
  readonly history: ReadonlyArray<TurnMessage>
  /** rows of the pipeline's knowledge tables that match this turn (by `rag_mode`, at most `no_of_relevant_points`) */
  readonly knowledge: ReadonlyArray<
    {
      readonly pointId: string
      readonly source: string
      readonly text: string
      /** what the reply records of the point (its table, `default_id`, and a source's title, URL or file, page) */
      readonly citation?: MessageCitation
    }
  >
  /** the pipeline's `cite_sources`: the reply ends with the links of the sources its points came from */
  readonly citeSources?: boolean
  /** the pipeline's model */
  readonly model: ModelRef
  /** what the turn's files cost before the model was called (an image described, a voice note transcribed) */
  readonly mediaUsage?: { readonly inputTokens: number; readonly outputTokens: number; readonly cost: number }
  /** answers instead when the model (or the routed tier's) fails after its retries (`fallback_model_id`) */
  readonly fallbackModel?: ModelRef | null
  /**
   * active `on_user_message` and `custom` actions of the pipeline and the current stage: offered to the model as a tool
   */
  readonly actions?: ReadonlyArray<TurnAction>
  /** Smart Routing tiers when enabled, else null */
  readonly routing:
    | ReadonlyArray<{ readonly tier: RoutingTier; readonly model: ModelRef; readonly instructions: string | null }>
    | null
  /** the pipeline's `context_message_count`: how many messages before the contact's latest the router reads with it */
  readonly contextMessageCount: number
  /** an eval's sandbox (docs/evals.md): the turn is left out of the reply metrics */
  readonly isEval: boolean
  /** An operator's note from handing the conversation back (docs/handoff.md): context for the replies that follow */
  readonly operatorNote?: string | null
  /** Whether the agent may ask for a person in this turn (`request_human`), when, and what the contact is told */
  readonly handoff?: TurnHandoff
  /**
   * The configuration the turn read at its start (docs/versions.md): 0 the tables, else a version's id.
   * The reply's stage move and action calls are applied with it, whatever was published meanwhile.
   */
  readonly configVersion?: number
}

/** The pipeline's (and stage's) handoff settings, as a turn uses them. */
export interface TurnHandoff {
  /** false once an operator handed back after this turn's messages: no loop */
  readonly canRequest: boolean
  /** `handoff_instructions` of the pipeline and the current stage: when to ask for a person */
  readonly instructions: string | null
  /** `static`: the contact is told `text`; `ai_generated`: the reply the model writes with its request */
  readonly bridgeMode: "static" | "ai_generated"
  readonly bridgeText: string
}

/**
 * Why a turn is not answered, known before the model is called (recorded on the contact messages as
 * `handled_reason`); `closed`: the conversation is gone, so there is nothing to record it on.
 */
export type SkipReason = Exclude<NoReplyReason, "provider_error" | "reply_withheld"> | "closed"

/** Why a reply the model was asked for could not be produced. */
export type FailReason = Extract<NoReplyReason, "provider_error" | "model_not_configured" | "reply_withheld">

export type Prepared =
  /** `detail`: what exactly is missing, for the log line (e.g. which key a model needs) */
  /** `isEval`: an eval's sandbox, left out of the reply metrics */
  | { readonly _tag: "Skip"; readonly reason: SkipReason; readonly detail?: string; readonly isEval: boolean }
  | { readonly _tag: "Ready"; readonly context: TurnContext }

/** What the agent produced; stored and charged in one transaction. */
export interface ReplyDraft {
  readonly text: string
  /** null for a static text (an opening message written by the operator) */
  readonly model: ModelRef | null
  readonly inputTokens: number
  readonly outputTokens: number
  /** USD, from the catalogue's prices (every model call of the turn, router included) */
  readonly cost: number
  /** the Smart Routing tier that answered, when routing is on */
  readonly tier: RoutingTier | null
  /** a stage the model moved the opportunity to (applied with the reply, exactly once) */
  readonly moveToStageId: number | null
  /** knowledge rows the reply was given (their usage is counted with the reply) */
  readonly knowledgePointIds: ReadonlyArray<string>
  /** the same rows as the reply records them (`messages.citations`) */
  readonly citations?: ReadonlyArray<MessageCitation>
  /** actions the model called as tools, with the values it gave for their `from_ai` variables (run after the commit) */
  readonly actionCalls?: ReadonlyArray<{ readonly actionId: number; readonly values: Readonly<Record<string, string>> }>
  /** the model asked for a person (`request_human`), and why: the reply is the bridge message */
  readonly handoffReason?: string | null
  /** the turn's configuration (`TurnContext.configVersion`); absent: what runs when the reply is stored */
  readonly configVersion?: number
  /** sent as this approved template (a provider's service window closed); `text` is its body as the contact sees it */
  readonly template?: TemplateSend
}

/** An opening message for a stage an opportunity entered. */
export interface OpeningContext {
  readonly entryId: number
  /** the stage, and how its opening message is made */
  readonly kind: "static" | "ai_generated"
  readonly staticText: string | null
  /** a provider's window closed: the stage's template goes (kind `static`, `staticText` its body) */
  readonly template?: TemplateSend
  /** for an AI-generated opening: the turn context (history may be empty) */
  readonly context: TurnContext
}

/** A followup due at one step of a sequence (SPEC.md 4.5 `create_followup`). */
export interface FollowupContext {
  readonly sequenceId: number
  /** 1-based step, of `steps` intervals */
  readonly step: number
  readonly steps: number
  readonly instructions: string | null
  readonly assets: string | null
  /** the turn context (history ends with the conversation's latest messages) */
  readonly context: TurnContext
}

/** Whether to write the followup of a step, or what the step came to without one. */
export type FollowupDue =
  | { readonly _tag: "Send"; readonly followup: FollowupContext }
  /** a provider's window closed: the followup's approved template goes instead, `text` its body */
  | { readonly _tag: "Template"; readonly template: TemplateSend; readonly text: string }
  | { readonly _tag: "Skip"; readonly outcome: FollowupOutcome }

/**
 * Implemented by the server: a conversation's replies, as its entity reads and makes them (delivery, openings and
 * followups are the ports of EngineTurns.ts). Every write is idempotent (a turn repeated after a crash finds its reply
 * stored and only delivers it) and failures are recorded, never raised.
 */
export interface ConversationTurnsPort {
  /** The turn waiting, if any, and replies an interrupted run stored but did not deliver (in one read). */
  readonly pending: (conversationId: string) => Effect.Effect<PendingWork>
  /**
   * Conversations a crash left work in: a contact message unhandled `graceMs` past its debounce window,
   * or a reply stored and not delivered `graceMs` after it was stored (the hand-over is not persisted).
   */
  readonly orphaned: (
    graceMs: number
  ) => Effect.Effect<ReadonlyArray<{ readonly conversationId: string; readonly messageId: string }>>
  /**
   * The conversation's turn context as it stands (its latest messages, no knowledge retrieved), when it has an agent.
   */
  readonly context: (conversationId: string) => Effect.Effect<Option.Option<TurnContext>>
  /** Whether to answer, and with what. */
  readonly prepare: (conversationId: string, upToMessageId: string) => Effect.Effect<Prepared>
  /** Marks the turn's contact messages handled without a reply, and why. */
  readonly skip: (conversationId: string, upToMessageId: string, reason: SkipReason) => Effect.Effect<void>
  /**
   * Stores the reply (not yet delivered), charges the workspace, applies a stage move, marks the turn handled.
   * Returns the reply's id; none when the workspace's credits do not cover its cost (not stored, the turn
   * handled as `no_credits`).
   */
  readonly commit: (
    conversationId: string,
    upToMessageId: string,
    draft: ReplyDraft
  ) => Effect.Effect<Option.Option<string>>
  /**
   * Records a reply that could not be produced (`status: failed`, `error`) and marks the turn handled with the reason.
   */
  readonly fail: (
    conversationId: string,
    upToMessageId: string,
    reason: FailReason,
    error: string,
    model: ModelRef | null
  ) => Effect.Effect<void>
}
export class ConversationTurns
  extends Context.Tag("@parley/domain/ConversationTurns")<ConversationTurns, ConversationTurnsPort>()
{}
