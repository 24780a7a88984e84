/**
 * The conversation tools of issue 19 (docs/handoff.md), beside SPEC.md 4.5's catalogue: find and read
 * conversations, and move one between the agent and a person. Same services, scopes and rules as
 * `/api/user/conversations`: reading needs `conversations:read`, a move `conversations:write`.
 */
import {
  ChannelId,
  ChannelKind,
  ContactId,
  ConversationId,
  ConversationMessagesQuery,
  ConversationStatus,
  HandoffCommand,
  HandoffState,
  ListConversationsQuery,
  OpportunityId,
  PipelineId,
  UserId
} from "@parley/domain"
import { IntBetween } from "@parley/domain/Schemas"
import { Effect, Schema } from "effect"
import { McpBackend } from "../Backend.js"
import { boolean, nextPage, nullable, object, objects, paged, result, string } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, required, withDefault } from "../ToolFields.js"

const conversationId = required(ConversationId, "From list_conversations")

export const conversationTools: ReadonlyArray<Tool> = [
  tool({
    name: "list_conversations",
    title: "List conversations",
    group: "discover",
    scope: "conversations:read",
    description:
      "Conversations with contacts, of all pipelines or one, newest activity first: contact, opportunity and stage, channel, handoff state, last message, the caller's unread count.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Only this pipeline's conversations"),
      channel_id: optional(ChannelId, "Only this channel's conversations"),
      channel_kind: optional(ChannelKind, "Only conversations on channels of this kind (whatsapp, telegram, web, ...)"),
      status: optional(ConversationStatus, "active: the agent or a wait has it; paused: an operator has it"),
      handoff: optional(
        HandoffState,
        "ai: the agent replies; waiting: a person was asked for; human: an operator has it"
      ),
      assignee_id: optional(UserId, "Only conversations this operator has"),
      opportunity_id: optional(OpportunityId, "Only this opportunity's conversations"),
      contact_id: optional(ContactId, "Only conversations with this contact"),
      q: optional(
        ListConversationsQuery.fields.q.from,
        "Part of the contact's name, email, phone or identifier, or of a message"
      ),
      unread: optional(Schema.Boolean, "true: only those with contact messages the caller has not read"),
      cursor: optional(
        ListConversationsQuery.fields.cursor.from,
        "next_cursor of the previous page; omit for the first"
      ),
      limit: withDefault(IntBetween(1, 100), 25, "Conversations per page")
    }),
    output: result({ conversations: objects, next_cursor: nullable(string), ...paged }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listConversations({ ...args, per_page: args.limit })).pipe(
        Effect.map((page) => {
          const more = page.next_cursor !== null
          return { ...page, has_more: more, next_page: nextPage(args, more, { cursor: page.next_cursor }) }
        })
      )
  }),
  tool({
    name: "get_conversation",
    title: "Get a conversation",
    group: "discover",
    scope: "conversations:read",
    description:
      "One conversation (notes, costs, handoff history) and its latest messages, newest first; a message's sender is contact, ai or operator.",
    input: Schema.Struct({
      conversation_id: conversationId,
      messages_limit: withDefault(IntBetween(1, 100), 20, "Latest messages to include"),
      messages_cursor: optional(
        ConversationMessagesQuery.fields.cursor.from,
        "messages_cursor of the previous call, for the messages before those"
      )
    }),
    output: result({
      conversation: object,
      messages: objects,
      has_more_messages: boolean,
      messages_cursor: nullable(string),
      next_page: paged.next_page
    }),
    run: (args) =>
      Effect.gen(function*() {
        const b = yield* McpBackend
        const conversation = yield* b.getConversation(args.conversation_id)
        const page = yield* b.conversationMessages(args.conversation_id, {
          direction: "older",
          per_page: args.messages_limit,
          ...(args.messages_cursor === undefined ? {} : { cursor: args.messages_cursor })
        })
        const more = page.next_cursor !== null
        return {
          conversation,
          messages: page.messages,
          has_more_messages: more,
          messages_cursor: page.next_cursor,
          next_page: nextPage(args, more, { messages_cursor: page.next_cursor })
        }
      })
  }),
  tool({
    name: "handoff_conversation",
    title: "Hand a conversation over",
    group: "update",
    scope: "conversations:write",
    destructive: true,
    idempotent: false,
    openWorld: true,
    description:
      "Moves a conversation between the AI agent and a person (the contact gets a bridge message on request).",
    input: Schema.Struct({ conversation_id: conversationId, ...HandoffCommand.fields }),
    output: result({ conversation: object }),
    run: ({ conversation_id, ...command }) =>
      Effect.flatMap(McpBackend, (b) => b.handoffConversation(conversation_id, command)).pipe(
        Effect.map((conversation) => ({ conversation }))
      )
  })
]
