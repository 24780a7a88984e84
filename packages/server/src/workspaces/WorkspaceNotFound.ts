import { NotFound } from "@parley/domain"

/** Another workspace's id answers like a missing one (docs/api.md), so ids reveal nothing. */
export const workspaceNotFound = new NotFound({ message: "Workspace not found." })
