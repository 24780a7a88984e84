/** `memberships` joined to `users`: who belongs to a workspace, read only. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { type WorkspaceId, WorkspaceMember } from "@parley/domain"
import { Effect, Schema } from "effect"

export class MembersRepo extends Effect.Service<MembersRepo>()("@parley/server/MembersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const members = SqlSchema.findAll({
      Request: Schema.Number,
      Result: WorkspaceMember,
      execute: (workspaceId) =>
        sql`
          select u.id, u.name, u.email, m.role
          from memberships m join users u on u.id = m.user_id
          where m.workspace_id = ${workspaceId}
          order by m.role <> 'owner', u.name, u.id`
    })

    return {
      members: (workspaceId: WorkspaceId) => Effect.orDie(members(workspaceId))
    }
  })
}) {}
