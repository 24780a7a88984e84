import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Opportunities } from "./Opportunities.js"

export const OpportunitiesHttpLive = HttpApiBuilder.group(Api, "opportunities", (handlers) =>
  Effect.gen(function*() {
    const opportunities = yield* Opportunities
    return handlers
      .handle("create", ({ payload }) => opportunities.create(payload))
      .handle("list", ({ urlParams }) => opportunities.list(urlParams))
      .handle("get", ({ path, urlParams }) => opportunities.get(path.identifier, urlParams.pipeline_id))
      .handle("update", ({ path, payload, urlParams }) =>
        opportunities.update(path.identifier, urlParams.pipeline_id, payload))
  }))

export const ContactsHttpLive = HttpApiBuilder.group(Api, "contacts", (handlers) =>
  Effect.gen(function*() {
    const opportunities = yield* Opportunities
    return handlers
      .handle("list", ({ urlParams }) => opportunities.listContacts(urlParams))
      .handle("opportunities", ({ path, urlParams }) => opportunities.ofContact(path.identifier, urlParams.pipeline_id))
  }))
