/**
 * The conversation tools of issue 19 (docs/handoff.md), beside SPEC.md 4.5's catalogue: find and read
 * conversations, and move one between the agent and a person. Same services, scopes and rules as
 * `/api/user/conversations`: reading needs `conversations:read`, a move `conversations:write`.
 */
import {
  ChannelId,
  ContactId,
  type ConversationDetail,
  ConversationId,
  type ConversationListItem,
  type ConversationMessage,
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
import { McpBackend } from "./Backend.js"
import { output, type Tool, tool } from "./Tool.js"
import { optional, plural, required, withDefault } from "./ToolFields.js"

const conversationId = required(ConversationId, "The conversation's id (from list_conversations)")

const contactName = (c: ConversationListItem["contact"]) => c.name ?? c.email ?? c.phone ?? c.identifier ?? "(no name)"

const handoffWords = (h: ConversationListItem["handoff"]) =>
  h.state === "ai" ? "with the agent" : h.state === "waiting" ? "waiting for a person" : `with operator #${h.assignee_id} (paused)`

const clip = (text: string | null, length: number) => text === null ? "" : text.length > length ? `${text.slice(0, length)}…` : text

const messageLine = (m: ConversationMessage) =>
  `- ${m.created_at} ${m.sender}${m.sender_id === null ? "" : ` #${m.sender_id}`}: ${
    m.message === null ? `(${plural(m.files.length, "file")})` : clip(m.message, 200)
  }`

const headline = (c: ConversationDetail) => `Conversation #${c.id} with ${contactName(c.contact)}: ${handoffWords(c.handoff)}`

export const conversationTools: ReadonlyArray<Tool> = [
  tool({
    name: "list_conversations",
    title: "List conversations",
    group: "discover",
    scope: "conversations:read",
    description:
      "Conversations with contacts, newest activity first: contact, current opportunity and stage, channel, handoff state (ai, waiting for a person, human), last message preview and the caller's unread count. Filter by pipeline, channel, status, handoff state, assignee, opportunity, contact, a search text or unread. Pass next_cursor back as cursor for the next page. Needs scope conversations:read.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Only this pipeline's conversations"),
      channel_id: optional(ChannelId, "Only this channel's conversations"),
      status: optional(ConversationStatus, "active (the agent or a wait) or paused (an operator has it)"),
      handoff: optional(HandoffState, "ai = the agent replies, waiting = a person was asked for, human = an operator has it"),
      assignee_id: optional(UserId, "Only conversations this user (operator) has"),
      opportunity_id: optional(OpportunityId, "Only this opportunity's conversations"),
      contact_id: optional(ContactId, "Only conversations with this contact"),
      q: optional(ListConversationsQuery.fields.q.from, "Part of the contact's name, email, phone or identifier, or of a message's text"),
      unread: optional(Schema.Boolean, "true: only conversations with contact messages the caller has not read"),
      cursor: optional(ListConversationsQuery.fields.cursor.from, "next_cursor of the previous call; omit for the first page"),
      limit: withDefault(IntBetween(1, 100), 25, "Conversations per page, 1 to 100 (default 25)")
    }),
    run: ({ limit, ...filters }) =>
      Effect.flatMap(McpBackend, (b) => b.listConversations({ ...filters, per_page: limit })).pipe(
        Effect.map((page) =>
          output(
            { ...page },
            [
              `${plural(page.conversations.length, "conversation")}${page.next_cursor === null ? " (last page)" : "; more with cursor = next_cursor"}:`,
              ...page.conversations.map((c) =>
                `- #${c.id} ${contactName(c.contact)}: ${handoffWords(c.handoff)}, ${plural(c.unread_count, "unread message")}${
                  c.last_message_preview === null ? "" : `, last: ${clip(c.last_message_preview, 80)}`
                }`
              )
            ].join("\n")
          )
        )
      )
  }),
  tool({
    name: "get_conversation",
    title: "Get a conversation",
    group: "discover",
    scope: "conversations:read",
    description:
      "One conversation with its notes, costs, handoff state and history, and its latest messages (newest first; pass messages_cursor back for earlier ones). Each message has sender: contact, ai (the agent) or operator (sender_id is the user), files, status and no_reply_reason. Needs scope conversations:read.",
    input: Schema.Struct({
      conversation_id: conversationId,
      messages_limit: withDefault(IntBetween(1, 100), 20, "Latest messages to include, 1 to 100 (default 20)"),
      messages_cursor: optional(ConversationMessagesQuery.fields.cursor.from, "messages_cursor of the previous call, for the messages before those; omit for the latest")
    }),
    run: ({ conversation_id, messages_cursor, messages_limit }) =>
      Effect.gen(function*() {
        const b = yield* McpBackend
        const conversation = yield* b.getConversation(conversation_id)
        const page = yield* b.conversationMessages(conversation_id, {
          direction: "older",
          per_page: messages_limit,
          ...(messages_cursor === undefined ? {} : { cursor: messages_cursor })
        })
        return output(
          { conversation, messages: page.messages, has_more_messages: page.next_cursor !== null, messages_cursor: page.next_cursor },
          [
            `${headline(conversation)}, ${plural(conversation.messages_count, "message")}. Latest ${page.messages.length}, newest first:`,
            ...page.messages.map(messageLine)
          ].join("\n")
        )
      })
  }),
  tool({
    name: "handoff_conversation",
    title: "Hand a conversation over",
    group: "update",
    scope: "conversations:write",
    description:
      "Moves a conversation between the AI agent and a person. request (from ai): a person is asked for, the contact gets a bridge message and the agent stops replying. take (from ai or waiting): you handle it yourself (status paused). assign (any state): assignee_id, a member of the conversation's workspace, handles it. return (from waiting or human): the agent replies again and reads note. A move that does not apply to the current state is a HandoffConflict error. Needs scope conversations:write.",
    input: Schema.Struct({ conversation_id: conversationId, ...HandoffCommand.fields }),
    run: ({ conversation_id, ...command }) =>
      Effect.flatMap(McpBackend, (b) => b.handoffConversation(conversation_id, command)).pipe(
        Effect.map((conversation) => output({ conversation }, `${headline(conversation)}.`))
      )
  })
]
