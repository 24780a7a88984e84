/**
 * The receiver's port for a website visitor: a widget session's bearer, checked, is the visitor and their
 * channel; a bad session is 401, a page of another site 403. The widget implements it (widget/Widget.ts), so web
 * chat depends on the port and not on the widget.
 */
import type { Forbidden, Unauthorized, WidgetVisitor } from "@parley/domain"
import { Context, type Effect } from "effect"

export class VisitorSessions extends Context.Tag("@parley/server/VisitorSessions")<VisitorSessions, {
  readonly authenticate: (
    token: string,
    origin: string | undefined
  ) => Effect.Effect<WidgetVisitor, Unauthorized | Forbidden>
}>() {}
