/**
 * Conversations for the people who run the agents (docs/handoff.md): find and read them, mark them
 * read, and move them between the agent and an operator. Reading needs `conversations:read`; changing
 * needs `conversations:write` (SPEC.md 4.2's update is one of these moves).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  ConversationDetail,
  ConversationMessagesPage,
  ConversationMessagesQuery,
  ConversationsPage,
  ListConversationsQuery,
  ReadMarker
} from "../Conversations.js"
import { Ok } from "../Envelope.js"
import {
  ConversationNotFoundResponse,
  HandoffConflictResponse,
  UnprocessableResponse,
  WorkspaceNotFoundResponse
} from "../Errors.js"
import { HandoffCommand } from "../Handoff.js"
import { ConversationIdFromString, ConversationState, UpdateConversation } from "../Opportunities.js"
import { Authorized } from "./Auth.js"
import { PublicOrigin } from "./PublicOrigin.js"

const idPath = Schema.Struct({ id: ConversationIdFromString })

export class ConversationsApi extends HttpApiGroup.make("conversations")
  .add(
    HttpApiEndpoint.get("list", "/api/user/conversations")
      .setUrlParams(ListConversationsQuery)
      .addSuccess(Ok(ConversationsPage))
      .addError(WorkspaceNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["conversations:read"])
      .annotate(OpenApi.Summary, "List conversations, newest activity first, with filters (cursor-paginated)")
      .annotate(
        OpenApi.Description,
        "Every conversation of the caller's workspaces (and those they manage). Each row: contact, current opportunity with its stage, channel kind, handoff, last message preview, counts and the caller's unread count."
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/api/user/conversations/:id")
      .setPath(idPath)
      .addSuccess(Ok(ConversationDetail))
      .addError(ConversationNotFoundResponse)
      .middleware(Authorized["conversations:read"])
      .annotate(OpenApi.Summary, "One conversation with its notes and handoff history")
  )
  .add(
    HttpApiEndpoint.get("messages", "/api/user/conversations/:id/messages")
      .setPath(idPath)
      .setUrlParams(ConversationMessagesQuery)
      .addSuccess(Ok(ConversationMessagesPage))
      .addError(ConversationNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["conversations:read"])
      .annotate(
        OpenApi.Summary,
        "A conversation's messages: who sent each, files, delivery attempts, why no reply was made"
      )
  )
  .add(
    HttpApiEndpoint.post("read", "/api/user/conversations/:id/read")
      .setPath(idPath)
      .addSuccess(Ok(ReadMarker, { message: "Conversation marked read." }))
      .addError(ConversationNotFoundResponse)
      .middleware(Authorized["conversations:read"])
      .annotate(OpenApi.Summary, "Mark the conversation read up to now, for the caller")
  )
  .add(
    HttpApiEndpoint.post("handoff", "/api/user/conversations/:id/handoff")
      .setPath(idPath)
      .setPayload(HandoffCommand)
      .addSuccess(Ok(ConversationDetail, { message: "Handoff updated." }))
      .addError(ConversationNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(HandoffConflictResponse)
      .middleware(Authorized["conversations:write"])
      .annotate(OpenApi.Summary, "Request a person, take over, assign, or hand back to the agent")
      .annotate(
        OpenApi.Description,
        "`request` (from `ai`): the contact gets a bridge message and the conversation a summary; the agent stops replying. `take` (from `ai` or `waiting`): the caller has it (`status: paused`). `assign` (any state): a member has it. `return` (from `waiting` or `human`): the agent replies again, reading `note`. A move that does not apply to the current state is 409."
      )
  )
  .add(
    HttpApiEndpoint.put("update", "/api/user/conversations/:id")
      .setPath(idPath)
      .setPayload(UpdateConversation)
      .addSuccess(Ok(ConversationState, { message: "Conversation updated successfully.", withoutValidation: true }))
      .addError(ConversationNotFoundResponse)
      .middleware(Authorized["conversations:write"])
      .annotate(OpenApi.Summary, "Pause or resume a conversation (operator takeover) and replace its notes")
      .annotate(
        OpenApi.Description,
        "`paused` is a takeover by the caller (handoff `human`), `active` hands back to the agent (handoff `ai`); the same moves as `POST .../handoff`."
      )
  )
  .middleware(PublicOrigin)
  .annotate(OpenApi.Title, "Conversations")
{}
