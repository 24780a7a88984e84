/**
 * The worker engine: @effect/cluster and @effect/workflow on the application's own SQL database (message
 * and runner storage in its tables). Entities and workflows registered here survive restarts: what was
 * pending resumes when a runner starts again.
 *
 * Topology (`PARLEY_CLUSTER`): `single` runs one in-process runner; `socket` makes roles `all` and
 * `worker` cluster runners that share shards through SQL runner storage and talk over TCP at
 * RUNNER_HOST:RUNNER_PORT, while roles `api` and `receiver` are clients that only send messages.
 */
import { ClusterWorkflowEngine, RunnerAddress, SingleRunner } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import {
  ActionEngineLive,
  ConversationEngineLive,
  DeliverReplyLive,
  FollowupSequenceLive,
  FollowupSweepLive
} from "@parley/worker"
import { Duration, Effect, Layer, Option } from "effect"
import { ActionRunsLive } from "../actions/ActionRunsLive.js"
import { ProviderTyping } from "../channels/ProviderTyping.js"
import { AppConfig, type Role } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { EvalSandboxRetentionLive } from "../evals/SandboxRetention.js"
import { HandoffEventsLive } from "../handoff/HandoffEvents.js"
import { KnowledgeGraphLive } from "../knowledge/Graph.js"
import { ReembedLive } from "../knowledge/Reembed.js"
import { KnowledgeUsageFoldLive } from "../knowledge/UsageFold.js"
import { OutboundHttp } from "../outbound/OutboundHttp.js"
import { progress } from "../StartupProgress.js"
import { EventSenderLive } from "../webhooks/EventSender.js"
import { ClusterRetentionLive } from "./ClusterRetention.js"
import { ConversationTurnsLive } from "./ConversationTurnsLive.js"
import { FollowupSequencesLive } from "./FollowupSequencesLive.js"
import { HandoffTurnsLive } from "./HandoffTurnsLive.js"
import { ModelRegistryLive } from "./ModelRegistryLive.js"
import { ReplyDeliveryLive } from "./ReplyDeliveryLive.js"
import { RetrySweepLive } from "./RetrySweep.js"
import { RunnerReaperLive } from "./RunnerReaper.js"
import { SequencesRepo } from "./SequencesRepo.js"

// every field the cluster would otherwise read from the environment (its HOST and PORT are not ours).
// Failover (docs/operations.md): a runner that dies is found by the others' health check (every 2 s, a
// ping over the runner socket) and marked unhealthy (or, when that check ran on the dead runner itself, by
// RunnerReaper once its heartbeat is older than the lock expiry), its shards are reassigned on the next refresh
// (1 s), and their locks (advisory on Postgres, freed with the dead session; else expiring after 6 s,
// refreshed every 2 s) let the new owner start at once.
const shardingConfig = {
  entityMessagePollInterval: 250,
  refreshAssignmentsInterval: 1000,
  runnerHealthCheckInterval: 2000,
  shardLockRefreshInterval: 2000,
  shardLockExpiration: 6000,
  runnerListenAddress: Option.none()
}

/** How often the hand-over sweep looks, and how overdue a message or an undelivered reply must be. */
const HANDOVER_SWEEP_MS = 2_000
const HANDOVER_GRACE_MS = 5_000

const RunnerLive = (role: Role) =>
  Layer.unwrapEffect(Effect.map(AppConfig, (config) => {
    if (config.cluster === "single") {
      // the address only names this process in runner storage: nothing listens on it
      const address = RunnerAddress.make(config.runnerHost, config.runnerPort)
      return SingleRunner.layer({
        runnerStorage: "sql",
        shardingConfig: { ...shardingConfig, runnerAddress: Option.some(address) }
      })
    }
    if (role === "api" || role === "receiver") {
      return NodeClusterSocket.layer({
        clientOnly: true,
        storage: "sql",
        shardingConfig: { ...shardingConfig, runnerAddress: Option.none() }
      })
    }
    const address = RunnerAddress.make(config.runnerHost, config.runnerPort)
    return NodeClusterSocket.layer({
      storage: "sql",
      shardingConfig: { ...shardingConfig, runnerAddress: Option.some(address) }
    })
  })).pipe(Layer.orDie)

const announce = (role: Role) =>
  Layer.effectDiscard(Effect.flatMap(AppConfig, (config) =>
    progress(
      config.cluster === "single"
        ? "Starting the engine (one runner in this process)"
        : role === "api" || role === "receiver"
        ? "Joining the cluster as a client (entities and workflows run on workers)"
        : `Starting the engine (a cluster runner at ${config.runnerHost}:${config.runnerPort})`
    )))

export const EngineLive = (role: Role) =>
  ClusterWorkflowEngine.layer.pipe(Layer.provideMerge(RunnerLive(role)), Layer.provideMerge(announce(role)))

/**
 * Every entity and workflow implementation, with what they use (a client-only process registers them
 * too: they never run there).
 */
export const HandlersLive = Layer.unwrapEffect(Effect.map(AppConfig, (config) =>
  Layer.mergeAll(
    DeliverReplyLive,
    ConversationEngineLive({
      // the hand-over to a conversation is not persisted: what a crash left behind is found within seconds
      handoverEvery: Duration.millis(Math.min(HANDOVER_SWEEP_MS, config.engineSweepMs)),
      handoverGrace: Duration.millis(Math.min(HANDOVER_GRACE_MS, config.engineSweepMs)),
      stageEntriesEvery: Duration.millis(Math.min(5_000, config.engineSweepMs))
    }),
    RetrySweepLive(config.engineSweepMs, config.webhookRetryDelayMs),
    ClusterRetentionLive(Duration.millis(config.clusterRetentionMs)),
    EvalSandboxRetentionLive(Duration.millis(config.evalSandboxRetentionMs)),
    KnowledgeUsageFoldLive(Duration.millis(Math.min(5_000, config.engineSweepMs))),
    RunnerReaperLive({ every: shardingConfig.runnerHealthCheckInterval, expiry: shardingConfig.shardLockExpiration }),
    FollowupSequenceLive,
    FollowupSweepLive(Duration.millis(config.engineSweepMs)),
    ActionEngineLive({
      every: Duration.millis(Math.min(1_000, config.engineSweepMs)),
      retryBaseMs: config.actionRetryBaseMs,
      sweepMs: config.engineSweepMs
    }),
    ReembedLive,
    KnowledgeGraphLive,
    EventSenderLive(Duration.millis(Math.min(1_000, config.engineSweepMs))),
    HandoffEventsLive({
      every: Duration.millis(Math.min(5_000, config.engineSweepMs)),
      timerEvery: Duration.millis(Math.min(1_000, config.engineSweepMs))
    })
  ))).pipe(
    Layer.provide(HandoffTurnsLive),
    Layer.provide([ConversationTurnsLive, ModelRegistryLive, ActionRunsLive]),
    Layer.provide(FollowupSequencesLive),
    Layer.provide(SequencesRepo.Default),
    Layer.provide(ReplyDeliveryLive),
    Layer.provide(ProviderTyping.Default),
    Layer.provide([OutboundHttp.Default, AppSecret.Default])
  )
