import { SqlClient } from "@effect/sql"
import {
  type Actor,
  type ChannelId,
  type ChannelKind,
  ChannelNotFound,
  ChannelWithSecret,
  ConnectableKinds,
  type CreateChannel,
  CurrentActor,
  hasClientCredentials,
  normaliseOrigin,
  notConnectable,
  type PipelineId,
  Unprocessable,
  type UpdateChannel,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option } from "effect"
import { AppSecret } from "../config/AppSecret.js"
import { randomBase62 } from "../identity/Secrets.js"
import { OutboundTargets } from "../outbound/OutboundTargets.js"
import { someOrFail } from "../util/Effects.js"
import { ChannelCache } from "./ChannelCache.js"
import { ChannelsRepo } from "./ChannelsRepo.js"

/**
 * `wc_` client ids identify web and widget channels. Both get a secret that signs their reply webhooks; a
 * web channel's also authenticates its server's calls, a widget channel's never leaves the business's server
 * (browsers use the public client id, bound to allowed origins).
 */
const newCredentials = () => ({
  clientId: `wc_${randomBase62(32)}`,
  secret: `wcs_${randomBase62(48)}`
})

const kindLabel: Record<ChannelKind, string> = {
  web: "Web chat",
  widget: "Website widget",
  whatsapp: "WhatsApp",
  messenger: "Messenger",
  instagram: "Instagram",
  linkedin: "LinkedIn"
}

export class Channels extends Effect.Service<Channels>()("@parley/server/Channels", {
  dependencies: [ChannelsRepo.Default, AppSecret.Default, ChannelCache.Default, OutboundTargets.Default],
  effect: Effect.gen(function*() {
    const repo = yield* ChannelsRepo
    const targets = yield* OutboundTargets
    const secrets = yield* AppSecret
    const channelCache = yield* ChannelCache
    const sql = yield* SqlClient.SqlClient

    const find = (actor: Actor, id: ChannelId) =>
      repo.find(actor.workspaceIds, id).pipe(someOrFail(() => new ChannelNotFound()))

    /** A pipeline may only be linked within the channel's own workspace. */
    const checkPipeline = (workspaceId: WorkspaceId, pipelineId: PipelineId | null | undefined) =>
      Effect.gen(function*() {
        if (pipelineId === undefined || pipelineId === null) return
        const owner = yield* repo.pipelineWorkspace(pipelineId)
        if (Option.isNone(owner) || owner.value !== workspaceId) {
          return yield* Unprocessable.of([{ field: "pipeline_id", message: "The selected pipeline does not exist." }])
        }
      })

    const checkCallback = (url: string | null | undefined) => {
      const issues = targets.issues("callback_url", url)
      return issues.length > 0 ? Effect.fail(Unprocessable.of(issues)) : Effect.void
    }

    const origins = (list: ReadonlyArray<string> | undefined) =>
      list === undefined ? undefined : [...new Set(list.map(normaliseOrigin))]

    const changed = channelCache.invalidate

    const list = Effect.fn("Channels.list")(function*() {
      return yield* repo.list((yield* CurrentActor).workspaceIds)
    })

    /** A kind without an adapter cannot be created or activated: it would take messages nobody answers. */
    const checkConnectable = (kind: ChannelKind) =>
      ConnectableKinds.includes(kind)
        ? Effect.void
        : Unprocessable.of([{ field: "kind", message: notConnectable(kind) }])

    const get = Effect.fn("Channels.get")(function*(id: ChannelId) {
      return yield* find(yield* CurrentActor, id)
    })

    const create = Effect.fn("Channels.create")(function*(input: CreateChannel) {
      const actor = yield* CurrentActor
      const workspaceId = input.workspace_id ?? actor.defaultWorkspaceId
      if (!actor.workspaceIds.includes(workspaceId)) {
        return yield* Unprocessable.of([{ field: "workspace_id", message: "The selected workspace is invalid." }])
      }
      yield* checkConnectable(input.kind)
      yield* checkPipeline(workspaceId, input.pipeline_id)
      yield* checkCallback(input.callback_url)
      const credentials = hasClientCredentials(input.kind) ? newCredentials() : null
      const id = yield* repo.insert({
        workspace_id: workspaceId,
        kind: input.kind,
        name: input.name ?? kindLabel[input.kind],
        pipeline_id: input.pipeline_id ?? null,
        is_active: input.is_active ?? true,
        client_id: credentials?.clientId ?? null,
        secret_ciphertext: credentials === null ? null : secrets.encrypt(credentials.secret),
        callback_url: input.callback_url ?? null,
        allowed_origins: origins(input.allowed_origins) ?? [],
        allowed_ips: input.allowed_ips ?? []
      })
      const channel = yield* find(actor, id).pipe(Effect.orDie)
      return new ChannelWithSecret({ ...channel, client_secret: credentials?.secret ?? null })
    })

    const update = Effect.fn("Channels.update")(function*(id: ChannelId, input: UpdateChannel) {
      const actor = yield* CurrentActor
      const channel = yield* find(actor, id)
      if (input.is_active === true) yield* checkConnectable(channel.kind)
      yield* checkPipeline(channel.workspace_id, input.pipeline_id)
      yield* checkCallback(input.callback_url)
      yield* repo.update(id, { ...input, allowed_origins: origins(input.allowed_origins) })
      yield* changed
      return yield* find(actor, id)
    })

    /** New client id and secret; the old pair stops working at once. */
    const rotate = Effect.fn("Channels.rotate")(function*(id: ChannelId) {
      const actor = yield* CurrentActor
      const channel = yield* find(actor, id)
      if (!hasClientCredentials(channel.kind)) {
        return yield* Unprocessable.of([{
          field: "kind",
          message: `A ${channel.kind} channel has no credentials to rotate.`
        }])
      }
      const credentials = newCredentials()
      yield* sql.withTransaction(
        repo.setCredentials(id, credentials.clientId, secrets.encrypt(credentials.secret))
      ).pipe(Effect.orDie)
      yield* changed
      const rotated = yield* find(actor, id)
      return new ChannelWithSecret({ ...rotated, client_secret: credentials.secret })
    })

    return { list, get, create, update, rotate }
  })
}) {}
