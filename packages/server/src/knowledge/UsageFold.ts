/**
 * Adds up the uses replies appended (`knowledge_point_uses`, migration 0029) into each row's `used_count` and
 * `latest_time_used`: one runner (a cluster singleton), every `every`, in batches while a batch comes back full.
 * A listing counts the uses not folded yet, so the fold's period never shows.
 */
import { type Duration, Effect, Layer, Metric } from "effect"
import { retentionSweep } from "../db/RetentionSweep.js"
import { KnowledgeRepo } from "./KnowledgeRepo.js"

const BATCH = 10_000

const folded = Metric.counter("parley_knowledge_uses_folded_total", {
  description: "Knowledge row uses of replies added up into the rows' used_count",
  incremental: true
})

export const KnowledgeUsageFoldLive = (every: Duration.DurationInput) =>
  retentionSweep({
    name: "Parley/knowledge-usage-fold",
    retention: every,
    batchSize: BATCH,
    deleted: folded,
    deleteBatch: () => Effect.flatMap(KnowledgeRepo, (repo) => repo.foldUsage(BATCH))
  }).pipe(Layer.provide(KnowledgeRepo.Default))
