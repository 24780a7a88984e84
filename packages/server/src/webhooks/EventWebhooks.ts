/**
 * Workspace event webhooks over REST (docs/handoff.md, "Events"): registered per workspace, each with its
 * own `whsec_` secret (stored encrypted, shown once), the event types it wants, and its delivery log.
 */
import {
  type CreateEventWebhook,
  CurrentActor,
  EventWebhook,
  type EventWebhookId,
  EventWebhookWithSecret,
  Unprocessable,
  type UpdateEventWebhook,
  WebhookNotFound
} from "@parley/domain"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { AppSecret } from "../config/AppSecret.js"
import { OutboundTargets } from "../outbound/OutboundTargets.js"
import { someOrFail } from "../util/Effects.js"
import { EventWebhooksRepo } from "./EventWebhooksRepo.js"

const publicFields = (
  { secret_ciphertext: _, ...row }:
    & { readonly secret_ciphertext: string }
    & ConstructorParameters<typeof EventWebhook>[0]
) => new EventWebhook(row)

export class EventWebhooks extends Effect.Service<EventWebhooks>()("@parley/server/EventWebhooks", {
  dependencies: [EventWebhooksRepo.Default, AppSecret.Default, OutboundTargets.Default],
  effect: Effect.gen(function*() {
    const repo = yield* EventWebhooksRepo
    const secrets = yield* AppSecret
    const targets = yield* OutboundTargets

    const checkUrl = (url: string | undefined) => {
      const issues = targets.issues("url", url)
      return issues.length > 0 ? Effect.fail(Unprocessable.of(issues)) : Effect.void
    }

    const owned = (id: EventWebhookId) =>
      Effect.flatMap(
        CurrentActor,
        (actor) => repo.find(id, actor.workspaceIds).pipe(someOrFail(() => new WebhookNotFound()))
      )

    const list = Effect.fn("EventWebhooks.list")(function*() {
      const actor = yield* CurrentActor
      return (yield* repo.list(actor.workspaceIds)).map(publicFields)
    })

    const create = Effect.fn("EventWebhooks.create")(function*(input: CreateEventWebhook) {
      const actor = yield* CurrentActor
      const workspaceId = input.workspace_id ?? actor.defaultWorkspaceId
      if (!actor.workspaceIds.includes(workspaceId)) {
        return yield* Unprocessable.of([{ field: "workspace_id", message: "The selected workspace is invalid." }])
      }
      yield* checkUrl(input.url)
      const secret = `whsec_${randomBytes(24).toString("base64")}`
      const id = yield* repo.insert({
        workspace_id: workspaceId,
        url: input.url,
        description: input.description ?? null,
        events: [...new Set(input.events ?? [])],
        is_active: input.is_active ?? true,
        secret_ciphertext: secrets.encrypt(secret)
      })
      const created = yield* owned(id).pipe(Effect.catchTag("WebhookNotFound", Effect.die))
      return new EventWebhookWithSecret({ ...publicFields(created), secret })
    })

    const get = Effect.fn("EventWebhooks.get")(function*(id: EventWebhookId) {
      return publicFields(yield* owned(id))
    })

    const update = Effect.fn("EventWebhooks.update")(function*(id: EventWebhookId, input: UpdateEventWebhook) {
      yield* owned(id)
      yield* checkUrl(input.url)
      yield* repo.update(id, {
        ...input,
        ...(input.events === undefined ? {} : { events: [...new Set(input.events)] })
      })
      return publicFields(yield* owned(id))
    })

    const remove = Effect.fn("EventWebhooks.remove")(function*(id: EventWebhookId) {
      yield* owned(id)
      yield* repo.remove(id)
      return { id, deleted: true }
    })

    const deliveries = Effect.fn("EventWebhooks.deliveries")(function*(id: EventWebhookId) {
      yield* owned(id)
      return yield* repo.deliveries(id)
    })

    return { list, create, get, update, remove, deliveries }
  })
}) {}
