import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Automation } from "./Automation.js"

export const AutomationHttpLive = HttpApiBuilder.group(Api, "automation", (handlers) =>
  Effect.gen(function*() {
    const automation = yield* Automation
    return handlers
      .handle("listVariables", ({ path, urlParams }) => automation.listVariables(path.pipeline, urlParams.q))
      .handle("createVariable", ({ path, payload }) => automation.createVariable(path.pipeline, payload))
      .handle("updateVariable", ({ path, payload }) => automation.updateVariable(path.variable, payload))
      .handle("deleteVariable", ({ path }) => automation.deleteVariable(path.variable))
      .handle("listActions", ({ path, urlParams }) => automation.listActions(path.pipeline, urlParams.stage_id))
      .handle("createAction", ({ path, payload }) => automation.createAction(path.pipeline, payload))
      .handle("updateAction", ({ path, payload }) => automation.updateAction(path.action, payload))
      .handle("deleteAction", ({ path }) => automation.deleteAction(path.action))
      .handle("actionResults", ({ path, urlParams }) => automation.results(path.pipeline, urlParams))
  }))
