import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Analytics } from "./Analytics.js"

export const AnalyticsHttpLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const analytics = yield* Analytics
    return handlers
      .handle("summary", ({ urlParams }) => analytics.summary(urlParams))
      .handle("aiPerformance", ({ urlParams }) => analytics.aiPerformance(urlParams))
      .handle("messagingStats", ({ urlParams }) => analytics.messagingStats(urlParams))
      .handle("handoffs", ({ urlParams }) => analytics.handoffs(urlParams))
      .handle("timeseries", ({ urlParams }) => analytics.timeseries(urlParams))
  }))
