/**
 * The conversation engine's side of stage entries (the `ConversationTurns` port): which entries wait,
 * consuming one (its stage_started actions enqueued, a won or lost stage resolving the opportunity's
 * handoffs), and the stage's opening message, stored once per entry.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { type OpeningContext, type ReplyDraft } from "@parley/domain"
import { Clock, Effect, Option, Stream } from "effect"
import { enqueueStageStarted } from "../actions/ActionRunsEnqueue.js"
import { windowClosed } from "../channels/ServiceWindow.js"
import { ChannelTemplates } from "../channels/Templates.js"
import { Handoff } from "../handoff/Handoff.js"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { StageEntryRepo } from "./StageEntryRepo.js"
import type { SnapshotContext } from "./TurnContextFrom.js"
import { draftColumns, storedId } from "./TurnDrafts.js"
import { TurnsRepo } from "./TurnsRepo.js"

export const makeStageEntryTurns = (snapshotContext: SnapshotContext) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const repo = yield* TurnsRepo
    const entries = yield* StageEntryRepo
    const opportunities = yield* OpportunitiesRepo
    const handoff = yield* Handoff
    const templates = yield* ChannelTemplates

    const opening = Effect.fn("ConversationTurns.opening")(function*(entryId: number) {
      const found = yield* entries.openingEntry(entryId)
      if (Option.isNone(found)) return Option.none<OpeningContext>()
      const e = found.value
      if (!e.is_opening_message || e.opening_message_type === null || e.conversation_id === null) {
        return Option.none<OpeningContext>()
      }
      // the opportunity has moved on since: that stage's opening is out of date
      if (e.current_stage_id !== e.stage_id) return Option.none<OpeningContext>()
      // a contact whose own message made the entry gets the agent's reply, not a greeting on top of it;
      // a create over the API greets even a contact who wrote before (SPEC.md 3.1, 4.1 rule 3)
      if (e.cause === "inbound" && (yield* entries.contactWrote(e.conversation_id))) {
        return Option.none<OpeningContext>()
      }
      const current = yield* snapshotContext(String(e.conversation_id), null)
      if (Option.isNone(current)) return Option.none<OpeningContext>()
      const c = current.value.snap
      // a provider's window closed (or the contact never wrote there): only the stage's template may go
      if (windowClosed(c, yield* Clock.currentTimeMillis)) {
        const template = e.opening_template === null
          ? Option.none()
          : yield* templates.resolveForSend(String(e.conversation_id), e.opening_template, "A stage's opening")
        if (Option.isNone(template)) {
          yield* Effect.logInfo("An opening message was skipped: outside_service_window").pipe(
            Effect.annotateLogs({ conversation_id: e.conversation_id, stage_id: e.stage_id })
          )
          return Option.none<OpeningContext>()
        }
        return Option.map(current.value.ready, (r): OpeningContext => ({
          entryId,
          kind: "static",
          staticText: template.value.text,
          template: template.value.send,
          context: r.context
        }))
      }
      return Option.map(current.value.ready, (r): OpeningContext => ({
        entryId,
        kind: e.opening_message_type!,
        staticText: e.static_opening_message,
        context: r.context
      }))
    })

    const commitOpening = (conversationId: string, entryId: number, draft: ReplyDraft) =>
      repo.storeReply(draftColumns(conversationId, `stage-entry:${entryId}`, draft, "opening")).pipe(
        Effect.map(storedId)
      )

    const stageEntries = (limit: number) =>
      Effect.map(
        entries.unconsumed(limit),
        (rows) => rows.map((r) => ({ entryId: r.entry_id, conversationId: r.conversation_id }))
      )

    const consumeStageEntry = Effect.fn("ConversationTurns.consumeStageEntry")(function*(entryId: number) {
      yield* sql.withTransaction(Effect.gen(function*() {
        // stage_started actions fire with the entry's consumption, exactly once
        if (!(yield* opportunities.consumeStageEntry(entryId))) return
        yield* enqueueStageStarted(sql, entryId)
        // a won or lost stage resolves the opportunity's conversations: the agent has them again
        for (const id of yield* entries.resolvedConversations(entryId)) {
          yield* handoff.moveAsSystem(id, { action: "resolve" }).pipe(
            Effect.catchTag("HandoffConflict", () => Effect.void)
          )
        }
      })).pipe(Effect.orDie)
    })

    const stageEntriesWritten = pg.listen("parley_stage_entries").pipe(
      Stream.as(undefined as void),
      Stream.catchAllCause((cause) =>
        Stream.fromEffect(Effect.logWarning("stage-entry notifications stopped; polling only", cause)).pipe(
          Stream.drain
        )
      )
    )

    return { opening, commitOpening, stageEntries, consumeStageEntry, stageEntriesWritten }
  })
