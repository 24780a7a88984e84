import { SqlClient } from "@effect/sql"
import {
  type Actor,
  Channel,
  ChannelCheck,
  type ChannelId,
  type ChannelKind,
  ChannelNotFound,
  ChannelWithSecret,
  ConnectableKinds,
  type CreateChannel,
  CurrentActor,
  hasClientCredentials,
  isProviderKind,
  issuesToValidation,
  normaliseOrigin,
  notConnectable,
  type PipelineId,
  Unprocessable,
  type UpdateChannel,
  type WorkspaceId
} from "@parley/domain"
import { KIND_LABEL } from "@parley/domain/KindLabels"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { BoundAddresses } from "../http/Listener.js"
import { randomBase62 } from "../identity/Secrets.js"
import { OutboundTargets } from "../outbound/OutboundTargets.js"
import { someOrFail } from "../util/Effects.js"
import { ChannelCache } from "./ChannelCache.js"
import { type ChannelRow, ChannelsRepo } from "./ChannelsRepo.js"
import { ProviderCredentials } from "./ProviderCredentials.js"
import { ChannelProviders } from "./Providers.js"

/**
 * `wc_` client ids identify web and widget channels. Both get a secret that signs their reply webhooks; a
 * web channel's also authenticates its server's calls, a widget channel's never leaves the business's server
 * (browsers use the public client id, bound to allowed origins).
 */
const newCredentials = () => ({
  clientId: `wc_${randomBase62(32)}`,
  secret: `wcs_${randomBase62(48)}`
})

export class Channels extends Effect.Service<Channels>()("@parley/server/Channels", {
  dependencies: [
    ChannelsRepo.Default,
    AppSecret.Default,
    AppConfig.Default,
    ChannelCache.Default,
    OutboundTargets.Default,
    BoundAddresses.Default,
    ChannelProviders.Default,
    ProviderCredentials.Default
  ],
  effect: Effect.gen(function*() {
    const repo = yield* ChannelsRepo
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const providers = yield* ChannelProviders
    const providerCredentials = yield* ProviderCredentials
    const targets = yield* OutboundTargets
    const secrets = yield* AppSecret
    const channelCache = yield* ChannelCache
    const sql = yield* SqlClient.SqlClient

    /** A provider channel's webhook on the receiver (RECEIVER_URL, else where the receiver bound). */
    const withUrl = ({ is_simulated, ...row }: ChannelRow) =>
      Effect.map(bound.receiver, (receiver) =>
        new Channel({
          ...row,
          webhook_url: row.webhook_key === null
            ? null
            : `${receiverBaseUrl(config, receiver)}/channels/${row.webhook_key}/webhook`,
          simulator_url: is_simulated && row.webhook_key !== null
            ? `${
              Option.getOrElse(config.publicUrl, () => bound.apiNow() ?? `http://${config.host}:${config.port}`)
            }/simulator/${row.kind}/${row.webhook_key}`
            : null
        }))

    const findRow = (actor: Actor, id: ChannelId) =>
      repo.find(actor.workspaceIds, id).pipe(someOrFail(() => new ChannelNotFound()))
    const find = (actor: Actor, id: ChannelId) => Effect.flatMap(findRow(actor, id), withUrl)

    const webhookUrlOf = (key: string) =>
      Effect.map(bound.receiver, (receiver) => `${receiverBaseUrl(config, receiver)}/channels/${key}/webhook`)

    /**
     * A provider kind's credentials, checked by its adapter's schema (422 naming `credentials.<field>`); a provider
     * whose webhook is set by API is told it (`webhookKey`'s URL), and its refusal is a 422 naming `credentials`.
     */
    const checkedCredentials = (kind: ChannelKind, given: unknown, webhookUrl: Effect.Effect<string | null>) =>
      Effect.gen(function*() {
        const entry = Option.getOrThrow(Option.flatMapNullable(providers.forKind(kind), (e) => e.connect))
        if (given === undefined) {
          return yield* Unprocessable.of([{
            field: "credentials",
            message: `A ${kind} channel needs its credentials.`
          }])
        }
        const decoded = Schema.decodeUnknownEither(entry.inputFor(given), { errors: "all", onExcessProperty: "error" })(
          given
        )
        if (Either.isLeft(decoded)) {
          return yield* Unprocessable.of(
            issuesToValidation(ParseResult.ArrayFormatter.formatErrorSync(decoded.left)).map((v) => ({
              field: v.field === "" ? "credentials" : `credentials.${v.field}`,
              message: v.message
            }))
          )
        }
        const input: unknown = decoded.right
        const stored = entry.complete(input)
        const url = entry.register === undefined ? null : yield* webhookUrl
        if (entry.register !== undefined && url !== null) {
          yield* entry.register(stored, url).pipe(
            Effect.catchTag("SendFailure", (failure) =>
              Unprocessable.of([{
                field: "credentials",
                message: `The ${kind} provider refused to set the channel's webhook: ${failure.message}`
              }]))
          )
        }
        const rules = Option.getOrThrow(providers.forKind(kind)).provider.rules
        return {
          stored,
          shown: entry.shown(stored),
          simulated: entry.simulated(stored),
          serviceWindowMs: entry.serviceWindowMs === undefined ? rules.serviceWindowMs : entry.serviceWindowMs(stored),
          ciphertext: secrets.encrypt(JSON.stringify(stored))
        }
      })

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
      const webhookKey = `wh_${randomBase62(32)}`
      const provider = isProviderKind(input.kind)
        ? yield* checkedCredentials(input.kind, input.credentials, webhookUrlOf(webhookKey))
        : null
      if (provider === null && input.credentials !== undefined) {
        return yield* Unprocessable.of([{
          field: "credentials",
          message: `A ${input.kind} channel has no provider credentials.`
        }])
      }
      const credentials = hasClientCredentials(input.kind) ? newCredentials() : null
      const id = yield* repo.insert({
        workspace_id: workspaceId,
        kind: input.kind,
        name: input.name ?? KIND_LABEL[input.kind] ?? input.kind,
        pipeline_id: input.pipeline_id ?? null,
        is_active: input.is_active ?? true,
        client_id: credentials?.clientId ?? null,
        secret_ciphertext: credentials === null ? null : secrets.encrypt(credentials.secret),
        callback_url: input.callback_url ?? null,
        allowed_origins: origins(input.allowed_origins) ?? [],
        allowed_ips: input.allowed_ips ?? [],
        credentials_ciphertext: provider?.ciphertext ?? null,
        webhook_key: provider === null ? null : webhookKey,
        rate_per_second: input.rate_per_second ?? null,
        service_window_ms: provider?.serviceWindowMs ?? null,
        is_simulated: provider?.simulated ?? false
      })
      const channel = yield* find(actor, id).pipe(Effect.orDie)
      return new ChannelWithSecret({
        ...channel,
        client_secret: credentials?.secret ?? null,
        ...(provider === null ? {} : { verify_token: provider.shown.verify_token ?? null })
      })
    })

    const update = Effect.fn("Channels.update")(function*(id: ChannelId, input: UpdateChannel) {
      const actor = yield* CurrentActor
      const channel = yield* find(actor, id)
      if (input.is_active === true) yield* checkConnectable(channel.kind)
      yield* checkPipeline(channel.workspace_id, input.pipeline_id)
      yield* checkCallback(input.callback_url)
      const replaced = input.credentials === undefined
        ? undefined
        : isProviderKind(channel.kind)
        ? yield* checkedCredentials(channel.kind, input.credentials, Effect.succeed(channel.webhook_url))
        : yield* Unprocessable.of([{
          field: "credentials",
          message: `A ${channel.kind} channel has no provider credentials.`
        }])
      yield* repo.update(id, {
        ...input,
        allowed_origins: origins(input.allowed_origins),
        credentials_ciphertext: replaced?.ciphertext,
        service_window_ms: replaced === undefined ? undefined : replaced.serviceWindowMs
      })
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

    /** Asks the provider who the channel is: `ok`, or what is wrong in plain words. */
    const check = Effect.fn("Channels.check")(function*(id: ChannelId) {
      const channel = yield* findRow(yield* CurrentActor, id)
      const entry = providers.forKind(channel.kind)
      const stored = yield* repo.credentialsOf(id)
      if (Option.isNone(entry) || Option.isNone(stored)) {
        return yield* Unprocessable.of([{
          field: "kind",
          message: `A ${channel.kind} channel has no provider to ask.`
        }])
      }
      const credentials = yield* providerCredentials.of(entry.value, stored.value.credentials_ciphertext)
      return yield* entry.value.provider.check(credentials).pipe(
        Effect.map((account) =>
          new ChannelCheck({ ok: true, message: "The provider accepts the channel's credentials.", account })
        ),
        Effect.catchTag("SendFailure", (failure) =>
          Effect.succeed(
            new ChannelCheck({
              ok: false,
              message: failure.kind === "auth_revoked"
                ? `The provider refused the channel's credentials: ${failure.message}`
                : failure.kind === "transient"
                ? `The provider could not be reached or failed: ${failure.message}`
                : `The provider refused the request: ${failure.message}`,
              account: null
            })
          ))
      )
    })

    return {
      list: Effect.fn("Channels.list")(function*() {
        return yield* Effect.forEach(yield* list(), withUrl)
      }),
      get,
      create,
      update,
      rotate,
      check
    }
  })
}) {}
