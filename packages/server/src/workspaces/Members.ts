/** A workspace's members, for the workspaces the caller reaches (docs/api.md). */
import { CurrentActor, type WorkspaceId, WorkspaceNotFound } from "@parley/domain"
import { Effect } from "effect"
import { MembersRepo } from "./MembersRepo.js"

export class Members extends Effect.Service<Members>()("@parley/server/Members", {
  dependencies: [MembersRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* MembersRepo

    const list = Effect.fn("Members.list")(function*(workspaceId: WorkspaceId) {
      yield* Effect.annotateCurrentSpan("workspace.id", workspaceId)
      const actor = yield* CurrentActor
      // another workspace's id answers like a missing one
      if (!actor.workspaceIds.includes(workspaceId)) return yield* new WorkspaceNotFound()
      return yield* repo.members(workspaceId)
    })

    return { list }
  })
}) {}
