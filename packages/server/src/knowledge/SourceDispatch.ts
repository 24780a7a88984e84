/**
 * Handing knowledge sources' syncs to the workflow engine (issue 41): one dispatcher per cluster (a singleton) makes
 * the sources whose schedule came round due, starts the next run of each pending source as a SyncKnowledgeSource
 * workflow (the engine spreads them over the cluster's runners, and a run survives a crash), and hands a run whose
 * lease expired to the engine again: a workflow that exists is not started twice, so this only starts one that was
 * claimed but never started, and a run handed out MAX_DISPATCHES times without progress ends `failed`.
 */
import { Singleton } from "@effect/cluster"
import { SyncKnowledgeSource, SyncKnowledgeSourceLive } from "@parley/worker"
import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { SourcesRepo } from "./SourcesRepo.js"
import { KnowledgeSyncsLive } from "./SourceSteps.js"

const MAX_DISPATCHES = 3

const SourceDispatchLive = Singleton.make(
  "Knowledge/source-dispatch",
  Effect.gen(function*() {
    const every = yield* Config.integer("KNOWLEDGE_SOURCES_POLL_MS").pipe(Config.withDefault(1_000))
    const leaseMs = yield* Config.integer("KNOWLEDGE_SOURCES_LEASE_MS").pipe(Config.withDefault(120_000))
    const repo = yield* SourcesRepo
    const sweep = Effect.gen(function*() {
      yield* repo.scheduleDue
      for (const stalled of yield* repo.stalled(leaseMs)) {
        if (stalled.dispatches > MAX_DISPATCHES) {
          yield* repo.finish(stalled.id, stalled.run, {
            _tag: "failed",
            error: "The sync stopped making progress; sync the source again."
          })
          continue
        }
        yield* Effect.logWarning("Handing a stalled knowledge source sync to the engine again").pipe(
          Effect.annotateLogs({ knowledge_source_id: stalled.id, run: stalled.run })
        )
        yield* SyncKnowledgeSource.execute({ sourceId: stalled.id, run: stalled.run }, { discard: true })
      }
      for (;;) {
        const claimed = yield* repo.claim(leaseMs)
        if (Option.isNone(claimed)) return
        yield* SyncKnowledgeSource.execute({ sourceId: claimed.value.id, run: claimed.value.run }, { discard: true })
      }
    })
    yield* sweep.pipe(Effect.catchAllCause(Effect.logError), Effect.repeat(Schedule.spaced(Duration.millis(every))))
  }).pipe(Effect.orDie, Effect.asVoid)
)

/** The workflow's implementation and its dispatcher. */
export const KnowledgeSourcesLive = Layer.mergeAll(
  SyncKnowledgeSourceLive.pipe(Layer.provide(KnowledgeSyncsLive)),
  SourceDispatchLive.pipe(Layer.provide(SourcesRepo.Default))
)
