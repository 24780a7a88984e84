/**
 * The worker engine: @effect/cluster and @effect/workflow on the application's own SQL database (message
 * and runner storage in its tables), with one in-process runner. Workflows registered here survive
 * restarts: pending ones resume when the runner starts again.
 */
import { ClusterWorkflowEngine, SingleRunner } from "@effect/cluster"
import { DeliverReplyLive } from "@parley/worker"
import { Layer } from "effect"
import { AppSecret } from "../config/AppSecret.js"
import { OutboundHttp } from "../outbound/OutboundHttp.js"
import { ReplyDeliveryLive } from "./ReplyDeliveryLive.js"

const RunnerLive = SingleRunner.layer({
  runnerStorage: "sql",
  shardingConfig: { entityMessagePollInterval: 250, refreshAssignmentsInterval: 1000 }
})

export const EngineLive = ClusterWorkflowEngine.layer.pipe(Layer.provideMerge(RunnerLive))

export const WorkflowsLive = DeliverReplyLive.pipe(
  Layer.provide(ReplyDeliveryLive),
  Layer.provide([OutboundHttp.Default, AppSecret.Default])
)

/** Engine plus every workflow implementation. */
export const WorkerLive = WorkflowsLive.pipe(Layer.provideMerge(EngineLive))
