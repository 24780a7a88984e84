import { SqlClient } from "@effect/sql"
import {
  BadRequest,
  type ContactId,
  type ConversationId,
  normalisePhone,
  type OpportunityId,
  type StageId,
  Unprocessable,
  type WebChannel
} from "@parley/domain"
import { Effect, Option } from "effect"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { WebChatRepo } from "./WebChatRepo.js"

/** Where a web-chat contact's messages go: its contact, its conversation on the channel, its current opportunity. */
export interface Thread {
  readonly contactId: ContactId
  readonly conversationId: ConversationId
  readonly opportunityId: OpportunityId | null
  readonly stageId: StageId | null
}

/** What opening a thread and storing a message need of a channel (web or widget). */
export type ThreadChannel = Pick<WebChannel, "id" | "workspace_id" | "pipeline_id">

/** Where a thread comes from: the opportunity's `source`, and the phone a provider gives for the contact. */
export interface ThreadOrigin {
  readonly source: string
  readonly phone?: string | undefined
  /** An email address a provider gives (a mail's sender): matches the contact as a phone does. */
  readonly email?: string | undefined
  /** Each thread is its own conversation with the contact (ProviderRules.conversationPerThread). */
  readonly perThread?: boolean
  /** The contact a verified link names (channels/ChannelLinks.ts): a new thread is that contact's. */
  readonly contactId?: ContactId | undefined
}
const webOrigin: ThreadOrigin = { source: "web" }

/** The identity fields Initiate may carry for a contact. */
export interface ThreadIdentity {
  readonly name?: string | undefined
  readonly email?: string | undefined
  readonly phone?: string | undefined
}

/** A web-chat contact's thread on a channel: found, or created with what it lacks (SPEC.md 4.4). */
export class WebChatThreads extends Effect.Service<WebChatThreads>()("@parley/server/WebChatThreads", {
  dependencies: [WebChatRepo.Default, OpportunitiesRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* WebChatRepo
    const opportunities = yield* OpportunitiesRepo
    const sql = yield* SqlClient.SqlClient

    /** A returning visitor with everything in place (contact, conversation, linked opportunity): one statement. */
    const existingThread = (channel: ThreadChannel, contactKey: string) =>
      Effect.map(
        repo.existingThread(channel.workspace_id, channel.id, channel.pipeline_id, contactKey),
        (existing) =>
          Option.isSome(existing) && existing.value.complete
            ? Option.some(
              {
                contactId: existing.value.contact_id,
                conversationId: existing.value.conversation_id!,
                opportunityId: channel.pipeline_id === null ? null : existing.value.opportunity_id,
                stageId: channel.pipeline_id === null ? null : existing.value.stage_id
              } satisfies Thread
            )
            : Option.none()
      )

    /**
     * Contact by the web-chat contact_id, its conversation on this channel, and its current opportunity in
     * the channel's pipeline (created in the first stage when the pipeline takes unknown contacts). Runs
     * inside the caller's transaction; concurrent first messages meet on the unique identifier.
     */
    const resolve = Effect.fn("WebChatThreads.resolve")(function*(
      channel: ThreadChannel,
      contactKey: string,
      origin: ThreadOrigin = webOrigin
    ) {
      // nothing to create or lock
      const existing = yield* existingThread(channel, contactKey)
      if (Option.isSome(existing)) return existing.value
      // a provider's phone (SPEC.md 4.1 rule 2): the contact found on another channel is the same contact; a link
      // Parley issued for a contact names it outright
      const byPhone = origin.contactId !== undefined
        ? Option.some(origin.contactId)
        : origin.phone === undefined
        ? Option.none()
        : yield* opportunities.contactByPhone(channel.workspace_id, origin.phone)
      const byEmail = Option.isSome(byPhone) || origin.email === undefined
        ? byPhone
        : yield* opportunities.contactByEmail(channel.workspace_id, origin.email)
      const found = Option.isSome(byEmail)
        ? byEmail
        : yield* opportunities.contactByIdentifier(channel.workspace_id, contactKey)
      const contactId = Option.isSome(found)
        ? found.value
        : yield* opportunities.insertContactWithIdentifier(channel.workspace_id, contactKey).pipe(
          Effect.flatMap(Option.match({
            onSome: Effect.succeed,
            onNone: () =>
              opportunities.contactByIdentifier(channel.workspace_id, contactKey).pipe(Effect.map(Option.getOrThrow))
          }))
        )
      yield* opportunities.lockContact(contactId)
      const conversation = origin.perThread === true
        ? yield* repo.findThread(channel.id, { contactKey })
        : yield* repo.conversationOnChannel(channel.id, contactId)
      const conversationId = Option.isSome(conversation)
        ? conversation.value
        : yield* repo.insertConversation({
          workspace_id: channel.workspace_id,
          contact_id: contactId,
          channel_id: channel.id,
          external_chat_id: contactKey
        })
      if (channel.pipeline_id === null) {
        return { contactId, conversationId, opportunityId: null, stageId: null } satisfies Thread
      }
      const pipelineId = channel.pipeline_id
      const current = yield* opportunities.newestOpportunityOf(contactId, pipelineId)
      if (Option.isSome(current)) {
        yield* opportunities.linkConversation(current.value, conversationId)
        const stageId = yield* repo.opportunityStage(current.value)
        return { contactId, conversationId, opportunityId: current.value, stageId } satisfies Thread
      }
      const pipeline = yield* repo.pipelineForChat(pipelineId)
      if (!pipeline.is_unknown_contacts_enabled || pipeline.first_stage_id === null) {
        return { contactId, conversationId, opportunityId: null, stageId: null } satisfies Thread
      }
      const stageId = pipeline.first_stage_id
      const opportunityId = yield* opportunities.insertOpportunity({
        workspace_id: channel.workspace_id,
        pipeline_id: pipelineId,
        stage_id: stageId,
        contact_id: contactId,
        status: "active",
        name: null,
        notes: null,
        context: null,
        is_test: false,
        source: origin.source,
        source_id: contactKey
      })
      yield* opportunities.recordStageEntry({
        workspace_id: channel.workspace_id,
        opportunity_id: opportunityId,
        pipeline_id: pipelineId,
        stage_id: stageId,
        previous_stage_id: null,
        cause: "inbound"
      })
      yield* opportunities.linkConversation(opportunityId, conversationId)
      return { contactId, conversationId, opportunityId, stageId } satisfies Thread
    })

    /**
     * Opens or resumes `contactKey`'s conversation on the channel after the checks of SPEC.md 4.4 (a linked
     * pipeline, subscription, credits, stages), and fills the contact's missing identity fields.
     */
    const open = Effect.fn("WebChatThreads.open")(
      function*(channel: ThreadChannel, contactKey: string, identity: ThreadIdentity = {}) {
        if (channel.pipeline_id === null) {
          return yield* Unprocessable.of([{ field: "client_id", message: "Channel is not linked to any pipeline" }])
        }
        const standing = yield* repo.workspaceStanding(channel.workspace_id)
        if (!standing.is_subscription_active) return yield* new BadRequest({ message: "No subscription found" })
        if (!(standing.credits > 0)) return yield* new BadRequest({ message: "No credits found" })
        const pipeline = yield* repo.pipelineForChat(channel.pipeline_id)
        if (pipeline.first_stage_id === null) {
          return yield* new BadRequest({ message: "No stages found for this pipeline" })
        }
        const phone = identity.phone === undefined ? null : normalisePhone(identity.phone) ?? null
        return yield* sql.withTransaction(Effect.gen(function*() {
          const thread = yield* resolve(channel, contactKey)
          // SPEC.md 4.4: identity fields fill what the contact lacks and never overwrite
          if (identity.name !== undefined || identity.email !== undefined || phone !== null) {
            yield* opportunities.fillContact(thread.contactId, channel.workspace_id, {
              name: identity.name ?? null,
              email: identity.email?.trim() ?? null,
              phone
            })
          }
          return thread
        })).pipe(Effect.orDie)
      }
    )

    return { resolve, open }
  })
}) {}
