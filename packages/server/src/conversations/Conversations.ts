/**
 * What an operator reads and does with conversations (docs/handoff.md): the list, one conversation, its
 * messages, read markers, and the handoff moves (also SPEC.md 4.2's update: `paused` takes over,
 * `active` hands back). Other workspaces' conversations are 404.
 */
import {
  type ChannelKind,
  ConversationDetail,
  type ConversationId,
  ConversationListItem,
  ConversationMessage,
  ConversationMessagesPage,
  type ConversationMessagesQuery,
  ConversationNotFound,
  type ConversationsOrder,
  ConversationsPage,
  CurrentActor,
  decodeMessagesCursor,
  encodeMessagesCursor,
  FileEntryWithUrl,
  type HandoffCommand,
  type HandoffMove,
  isProviderKind,
  type ListConversationsQuery,
  noReplyReasonOf,
  PublicBaseUrl,
  ReadMarker,
  statusOfHandoff,
  Unprocessable,
  type UpdateConversation,
  WorkspaceNotFound
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { windowClosesAt } from "../channels/ServiceWindow.js"
import { FileStorage } from "../files/FileStorage.js"
import { Handoff } from "../handoff/Handoff.js"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { someOrFail } from "../util/Effects.js"
import { type ConversationRow, ConversationsRepo, type ListCursor } from "./ConversationsRepo.js"

const listItem = (r: ConversationRow) => ({
  id: r.id,
  workspace_id: r.workspace_id,
  status: r.status,
  is_test: r.is_test,
  channel_id: r.channel_id,
  channel_kind: r.channel_kind,
  contact: {
    id: r.contact_id,
    name: r.contact_name,
    email: r.contact_email,
    phone: r.contact_phone,
    identifier: r.contact_identifier
  },
  opportunity: r.opportunity_id === null
    ? null
    : {
      id: r.opportunity_id,
      name: r.opportunity_name,
      pipeline_id: r.pipeline_id,
      stage_id: r.stage_id,
      stage_name: r.stage_name,
      stage_nature: r.stage_nature,
      status: r.opportunity_status
    },
  handoff: {
    state: r.handoff_state,
    requested_at: r.handoff_requested_at,
    requested_by: r.handoff_requested_by,
    reason: r.handoff_reason,
    summary: r.handoff_summary,
    assignee_id: r.handoff_assignee_id,
    taken_at: r.handoff_taken_at,
    returned_at: r.handoff_returned_at,
    return_note: r.handoff_return_note,
    due_at: r.handoff_due_at
  },
  last_message_at: r.last_message_at,
  last_message_preview: (r.contact_message ?? r.last_message_content)?.slice(0, 200) ?? null,
  reply_failed: r.reply_failed,
  messages_count: r.messages_count,
  unread_count: r.unread_count,
  created_at: r.created_at
})

const decodeItem = Schema.decodeUnknown(ConversationListItem)
const decodeDetail = Schema.decodeUnknown(ConversationDetail)
const decodeMessage = Schema.decodeUnknown(ConversationMessage)

/**
 * Opaque to clients: base64url of `<activity_at>|<id>` in the activity order, `q|<rank>|<key>|<id>` in
 * the queue order, so a cursor of one order is refused by the other.
 */
const encodeListCursor = (order: ConversationsOrder, r: ConversationRow) =>
  Buffer.from(order === "queue" ? `q|${r.queue_rank}|${r.queue_key}|${r.id}` : `${r.activity_at}|${r.id}`, "utf8")
    .toString("base64url")
const isId = (s: string | undefined): s is string => s !== undefined && /^[1-9][0-9]{0,15}$/.test(s)
const decodeListCursor = (order: ConversationsOrder, s: string): ListCursor | undefined => {
  const parts = Buffer.from(s, "base64url").toString("utf8").split("|")
  if (order === "queue") {
    const [tag, rank, key, id] = parts
    return parts.length === 4 && tag === "q" && rank !== undefined && /^[012]$/.test(rank) && key !== undefined &&
        /^-?[0-9]{1,12}(\.[0-9]{1,9})?$/.test(key) && isId(id)
      ? { order, rank: Number(rank), key, id: Number(id) }
      : undefined
  }
  const [at, id] = parts
  return parts.length === 2 && at !== undefined && !Number.isNaN(Date.parse(at)) && isId(id)
    ? { order, activityAt: at, id: Number(id) }
    : undefined
}
const badCursor = Unprocessable.of([{ field: "cursor", message: "is not a cursor this endpoint returned" }])

/** The operator's command as a move of the state machine. */
const moveOf = (command: HandoffCommand, userId: number) => {
  switch (command.action) {
    case "request":
      return Effect.succeed<HandoffMove>({ action: "request", actor: "operator", reason: command.reason ?? null })
    case "take":
      return Effect.succeed<HandoffMove>({ action: "take", userId })
    case "assign":
      return command.assignee_id === undefined
        ? Effect.fail(Unprocessable.of([{ field: "assignee_id", message: "is required when action is assign" }]))
        : Effect.succeed<HandoffMove>({ action: "assign", userId, assigneeId: command.assignee_id })
    case "return":
      return Effect.succeed<HandoffMove>({ action: "return", actor: "operator", userId, note: command.note ?? null })
  }
}

export class Conversations extends Effect.Service<Conversations>()("@parley/server/Conversations", {
  dependencies: [
    ConversationsRepo.Default,
    Handoff.Default,
    FileStorage.Default,
    OpportunitiesRepo.Default
  ],
  effect: Effect.gen(function*() {
    const repo = yield* ConversationsRepo
    const handoff = yield* Handoff
    const storage = yield* FileStorage
    const opportunities = yield* OpportunitiesRepo

    const list = Effect.fn("Conversations.list")(function*(query: ListConversationsQuery) {
      const actor = yield* CurrentActor
      const order = query.order ?? "activity"
      const after = query.cursor === undefined ? undefined : decodeListCursor(order, query.cursor)
      if (query.cursor !== undefined && after === undefined) return yield* badCursor
      if (query.workspace_id !== undefined && !actor.workspaceIds.includes(query.workspace_id)) {
        return yield* new WorkspaceNotFound()
      }
      const rows = yield* repo.list({
        workspaceIds: query.workspace_id === undefined ? actor.workspaceIds : [query.workspace_id],
        userId: actor.userId,
        pipelineId: query.pipeline_id,
        channelId: query.channel_id,
        channelKind: query.channel_kind,
        status: query.status,
        handoff: query.handoff,
        assigneeId: query.assignee_id,
        opportunityId: query.opportunity_id,
        stageId: query.stage_id,
        contactId: query.contact_id,
        q: query.q,
        unread: query.unread,
        order,
        after,
        limit: query.per_page + 1
      })
      const page = rows.slice(0, query.per_page)
      const items = yield* Effect.orDie(Effect.forEach(page, (r) => decodeItem(listItem(r))))
      const last = page[page.length - 1]
      return new ConversationsPage({
        conversations: items,
        next_cursor: rows.length > query.per_page && last !== undefined ? encodeListCursor(order, last) : null
      })
    })

    /** The caller's conversation row (404 for another workspace's), without the handoff history. */
    const owned = (id: ConversationId) =>
      Effect.flatMap(
        CurrentActor,
        (actor) => repo.find(actor.workspaceIds, actor.userId, id).pipe(someOrFail(() => new ConversationNotFound()))
      )

    const get = Effect.fn("Conversations.get")(function*(id: ConversationId) {
      const row = yield* owned(id)
      const events = yield* handoff.events(row.id)
      // a provider channel: one more read, of its window and the contact's latest message time
      const windowEnd = row.channel_kind === null || !isProviderKind(row.channel_kind as ChannelKind)
        ? Option.none<number>()
        : windowClosesAt(yield* repo.window(row.id))
      return yield* Effect.orDie(decodeDetail({
        ...listItem(row),
        notes: row.notes,
        cost_for_user: row.cost_for_user,
        avg_response_time: row.avg_response_time,
        handoff_events: events,
        service_window_closes_at: Option.match(windowEnd, {
          onNone: () => null,
          onSome: (ms) => new Date(ms).toISOString().replace(/Z$/, "000Z")
        })
      }))
    })

    const messages = Effect.fn("Conversations.messages")(
      function*(id: ConversationId, query: ConversationMessagesQuery) {
        const conversation = yield* owned(id)
        const base = yield* PublicBaseUrl
        const after = query.cursor === undefined ? undefined : decodeMessagesCursor(query.cursor)
        if (query.cursor !== undefined && after === undefined) return yield* badCursor
        const rows = yield* repo.messages(conversation.id, {
          direction: query.direction,
          after,
          limit: query.per_page + 1
        })
        const page = rows.slice(0, query.per_page)
        const attempts = yield* repo.deliveries(page.map((m) => m.id))
        const items = yield* Effect.orDie(Effect.forEach(page, (m) =>
          decodeMessage({
            id: m.id,
            conversation_id: m.conversation_id,
            role: m.role,
            sender: m.role === "user" ? "contact" : m.is_manual ? "operator" : "ai",
            sender_id: m.is_manual ? m.sender_id : null,
            message: m.message,
            files: m.files.map((f) => new FileEntryWithUrl({ ...f, url: base + storage.signedPath(f.path) })),
            status: m.status,
            call_type: m.call_type,
            error: m.error,
            no_reply_reason: noReplyReasonOf(m.role, m.handled_reason),
            external_message_id: m.external_message_id,
            cost_for_user: m.cost_for_user,
            delivery_status: m.delivery_status,
            delivered_at: m.delivered_at,
            read_at: m.read_at,
            deliveries: attempts.filter((a) => a.message_id === m.id).map(({ message_id: _, ...a }) => a),
            ...(m.citations === null ? {} : { citations: m.citations }),
            created_at: m.created_at
          })))
        const last = page[page.length - 1]
        return new ConversationMessagesPage({
          messages: items,
          next_cursor: rows.length > query.per_page && last !== undefined
            ? encodeMessagesCursor({ createdAt: last.created_at, id: last.id })
            : null
        })
      }
    )

    const markRead = Effect.fn("Conversations.markRead")(function*(id: ConversationId) {
      const actor = yield* CurrentActor
      const conversation = yield* owned(id)
      const readAt = yield* repo.markRead(actor.userId, conversation.id)
      return new ReadMarker({ conversation_id: id, read_at: readAt, unread_count: 0 })
    })

    const move = Effect.fn("Conversations.move")(function*(id: ConversationId, command: HandoffCommand) {
      const actor = yield* CurrentActor
      yield* handoff.move(id, yield* moveOf(command, actor.userId))
      return yield* get(id)
    })

    /** SPEC.md 4.2: `paused` is a takeover by the caller, `active` a hand-back; notes are replaced. */
    const update = Effect.fn("Conversations.update")(function*(id: ConversationId, input: UpdateConversation) {
      const actor = yield* CurrentActor
      const { handoff_state: state } = yield* owned(id)
      const moved = input.status === "paused" && state !== "human"
        ? yield* handoff.move(id, { action: "take", userId: actor.userId })
        : input.status === "active" && state !== "ai"
        ? yield* handoff.move(id, { action: "return", actor: "operator", userId: actor.userId, note: null })
        : undefined
      if (input.notes !== undefined) yield* opportunities.updateConversation(id, { notes: input.notes })
      return { id, status: statusOfHandoff(moved?.to ?? state) }
    }, Effect.catchTags({ HandoffConflict: Effect.die, Unprocessable: Effect.die }))

    return { list, get, messages, markRead, move, update }
  })
}) {}
