import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Knowledge } from "./Knowledge.js"
import { Sources } from "./Sources.js"

export const KnowledgeHttpLive = HttpApiBuilder.group(Api, "knowledge", (handlers) =>
  Effect.gen(function*() {
    const knowledge = yield* Knowledge
    const sources = yield* Sources
    return handlers
      .handle("list", () => knowledge.list())
      .handle("create", ({ payload }) => knowledge.create(payload))
      .handle("get", ({ path }) => knowledge.ownTable(path.knowledgeTable))
      .handle("update", ({ path, payload }) => knowledge.update(path.knowledgeTable, payload))
      .handle("columns", ({ path }) => knowledge.columns(path.knowledgeTable))
      .handle("points", ({ path, urlParams }) =>
        knowledge.points(path.knowledgeTable, urlParams.per_page, urlParams.next_page_offset))
      .handle("upsert", ({ path, payload }) =>
        knowledge.upsert(path.knowledgeTable, payload.points))
      .handle("remove", ({ path, payload }) => knowledge.remove(path.knowledgeTable, payload.ids))
      .handle("search", ({ path, payload }) => knowledge.search(path.knowledgeTable, payload))
      .handle("addSource", ({ path, payload }) => sources.create(path.knowledgeTable, payload))
      .handle("sources", ({ path }) => sources.list(path.knowledgeTable))
      .handle("source", ({ path }) => sources.get(path.knowledgeTable, path.source))
      .handle("syncSource", ({ path }) => sources.sync(path.knowledgeTable, path.source))
      .handle("removeSource", ({ path }) => sources.remove(path.knowledgeTable, path.source))
  }))
