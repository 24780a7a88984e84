import { Context } from "effect"
import type { TokenId, UserId, WorkspaceId } from "./Ids.js"
import type { Scope } from "./Scopes.js"

export interface Actor {
  /** The user whose data is touched: the token's owner, or the acted-as user under `X-Act-As-User`. */
  readonly userId: UserId
  /** The token's owner; differs from `userId` only under super-user impersonation. */
  readonly authenticatedUserId: UserId
  readonly tokenId: TokenId
  readonly scopes: ReadonlyArray<Scope>
  /** Workspaces the user owns first, then the ones they manage. Every tenant query filters on these. */
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  /** Where new top-level resources go when the caller does not name a workspace: the first one owned. */
  readonly defaultWorkspaceId: WorkspaceId
  /** The token's owner is a super user: manages what is server-wide (docs/agent.md, "Models and providers"). */
  readonly isSuperUser?: boolean
}

/** Provided by the auth middleware; every port method that touches tenant data requires it. */
export class CurrentActor extends Context.Tag("@parley/domain/CurrentActor")<CurrentActor, Actor>() {}
