import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { EvalCases } from "./EvalCases.js"
import { EvalRuns } from "./EvalRuns.js"

export const EvalsHttpLive = HttpApiBuilder.group(Api, "evals", (handlers) =>
  Effect.gen(function*() {
    const cases = yield* EvalCases
    const runs = yield* EvalRuns
    return handlers
      .handle("listCases", ({ path }) => cases.list(path.pipeline))
      .handle("createCase", ({ path, payload }) => cases.create(path.pipeline, payload))
      .handle("getCase", ({ path }) => cases.get(path.case))
      .handle("replaceCase", ({ path, payload }) => cases.replace(path.case, payload))
      .handle("deleteCase", ({ path }) => cases.remove(path.case))
      .handle("saveConversation", ({ path, payload }) => cases.saveConversation(path.conversation, payload))
      .handle("startRun", ({ path, payload }) => runs.start(path.pipeline, payload))
      .handle("listRuns", ({ path }) => runs.list(path.pipeline))
      .handle("getRun", ({ path }) => runs.get(path.run))
  }))
