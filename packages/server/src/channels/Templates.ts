/**
 * Approved-message templates (docs/channels.md, "The window and templates"): listed from the provider for a channel
 * (cached for `CACHE_MS` per set of credentials), and resolved for a send: `{{variable}}` in each body parameter
 * replaced by the pipeline's variable (a `fixed` value or a `from_system` field, as actions read them), checked
 * against the provider's list when it could be read, and the body filled in as the text the history keeps.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  type ChannelId,
  ChannelNotFound,
  type ChannelTemplate,
  CurrentActor,
  type MessageTemplate,
  placeholders,
  ProviderFailed,
  renderText,
  type TemplateSend,
  templateText,
  Unprocessable
} from "@parley/domain"
import { Effect, Either, Option, Schema } from "effect"
import { ActionRunsRepo } from "../actions/ActionRunsRepo.js"
import { ChannelsRepo } from "./ChannelsRepo.js"
import { ProviderCredentials } from "./ProviderCredentials.js"
import { ChannelProviders } from "./Providers.js"

const CACHE_MS = 5 * 60_000

/** What a conversation's template is resolved with: its channel and the opportunity whose variables fill it. */
const Subject = Schema.Struct({
  channel_id: Schema.NullOr(Schema.Number),
  kind: Schema.NullOr(Schema.String),
  credentials_ciphertext: Schema.NullOr(Schema.String),
  opportunity_id: Schema.NullOr(Schema.Number),
  stage_id: Schema.NullOr(Schema.Number),
  pipeline_id: Schema.NullOr(Schema.Number),
  config_version_id: Schema.NullOr(Schema.Number)
})

/** A template ready to send: what the provider gets, and the text the conversation's history shows. */
export interface ResolvedTemplate {
  readonly send: TemplateSend
  readonly text: string
}

export class ChannelTemplates extends Effect.Service<ChannelTemplates>()("@parley/server/ChannelTemplates", {
  dependencies: [ChannelProviders.Default, ProviderCredentials.Default, ChannelsRepo.Default, ActionRunsRepo.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const providers = yield* ChannelProviders
    const credentials = yield* ProviderCredentials
    const channels = yield* ChannelsRepo
    const actions = yield* ActionRunsRepo
    const cache = new Map<string, { readonly at: number; readonly templates: ReadonlyArray<ChannelTemplate> }>()

    /** The provider's templates for one set of credentials; none when its provider has no templates. */
    const fetch = (kind: string, ciphertext: string) =>
      Effect.gen(function*() {
        const entry = providers.forKind(kind)
        const list = Option.flatMap(entry, (e) => Option.fromNullable(e.provider.templates))
        if (Option.isNone(entry) || Option.isNone(list)) return Option.none<ReadonlyArray<ChannelTemplate>>()
        const hit = cache.get(ciphertext)
        if (hit !== undefined && Date.now() - hit.at < CACHE_MS) return Option.some(hit.templates)
        const templates = yield* list.value(yield* credentials.of(entry.value, ciphertext))
        if (cache.size >= 1_000) cache.clear()
        cache.set(ciphertext, { at: Date.now(), templates })
        return Option.some(templates)
      })

    /** `GET /api/user/channels/{channel}/templates`: the channel's templates at the provider, approved or not. */
    const list = Effect.fn("ChannelTemplates.list")(function*(id: ChannelId) {
      const actor = yield* CurrentActor
      const channel = yield* channels.find(actor.workspaceIds, id)
      if (Option.isNone(channel)) return yield* new ChannelNotFound()
      const stored = yield* channels.credentialsOf(id)
      const found = Option.isNone(stored)
        ? Option.none()
        : yield* fetch(stored.value.kind, stored.value.credentials_ciphertext).pipe(
          Effect.catchTag("SendFailure", (f): Effect.Effect<never, Unprocessable | ProviderFailed> =>
            // no call was made: the credentials lack what listing needs (WhatsApp: the business account's id)
            f.kind === "misconfigured"
              ? Unprocessable.of([{ field: "credentials", message: f.message }])
              : Effect.fail(new ProviderFailed({ message: `The provider could not list the templates: ${f.message}` })))
        )
      if (Option.isNone(found)) {
        return yield* Unprocessable.of([{
          field: "kind",
          message: `A ${channel.value.kind} channel has no templates: they belong to a provider with a service window.`
        }])
      }
      return found.value
    })

    const subject = SqlSchema.findOne({
      Request: Schema.String,
      Result: Subject,
      execute: (conversationId) =>
        sql`
          select ch.id as channel_id, ch.kind, ch.credentials_ciphertext, o.id as opportunity_id, o.stage_id,
                 o.pipeline_id, o.config_version_id
          from conversations c
          left join channels ch on ch.id = c.channel_id
          left join lateral (
            select o.* from conversation_opportunity co join opportunities o on o.id = co.opportunity_id
            where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
          ) o on true
          where c.id = ${conversationId}`
    })

    /** The values of the variables the parameters name: `fixed` ones and `from_system` fields; others are empty. */
    const values = (s: typeof Subject.Type, conversationId: string, names: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const out: Record<string, string | null> = Object.fromEntries(names.map((n) => [n, null]))
        if (names.length === 0 || s.pipeline_id === null) return out
        const variables = yield* actions.variables(s.pipeline_id, s.config_version_id, names)
        const system: Record<string, Record<string, unknown>> = {}
        if (variables.some((v) => v.type === "from_system") && s.opportunity_id !== null) {
          const o = yield* actions.opportunityValues(s.opportunity_id, Number(conversationId))
          if (Option.isSome(o)) system.opportunity = o.value
          const stage = s.stage_id === null ? Option.none() : yield* actions.stageValues(s.stage_id)
          if (Option.isSome(stage)) system.stage = stage.value
        }
        for (const v of variables) {
          const [entity, field] = v.value.split(".")
          const raw = v.type === "fixed" ? v.value : v.type === "from_system" ? system[entity!]?.[field!] : undefined
          out[v.name] = raw === undefined || raw === null ? null : String(raw)
        }
        return out
      })

    /**
     * A conversation's template resolved for sending. Fails with the 422 an operator is told (`template.name` not
     * approved for the account, `template.parameters` of the wrong count or resolving to nothing); an automated send
     * logs the same message and is skipped.
     */
    const resolve = Effect.fn("ChannelTemplates.resolve")(function*(conversationId: string, template: MessageTemplate) {
      const s = yield* Effect.map(subject(conversationId), Option.getOrUndefined).pipe(Effect.orDie)
      if (s === undefined || s.kind === null || s.credentials_ciphertext === null) {
        return yield* Unprocessable.of([{
          field: "template",
          message: "can only be sent on a provider channel with credentials (WhatsApp)"
        }])
      }
      // the provider's list, when it can be read: a send is not refused because the listing failed
      const listed = yield* fetch(s.kind, s.credentials_ciphertext).pipe(
        Effect.either,
        Effect.map(Either.getOrElse(() => Option.none<ReadonlyArray<ChannelTemplate>>()))
      )
      const names = [...new Set(template.parameters.flatMap(placeholders))]
      const resolved = yield* values(s, conversationId, names)
      const parameters = template.parameters.map((p) => renderText(p, resolved).trim())
      const issues: Array<{ field: string; message: string }> = []
      const empty = parameters.findIndex((p) => p === "")
      if (empty >= 0) {
        issues.push({
          field: "template.parameters",
          message: `parameter ${empty + 1} is empty once its variables are filled in`
        })
      }
      const known = Option.map(
        listed,
        (all) => all.find((t) => t.name === template.name && t.language === template.language)
      )
      if (Option.isSome(known) && (known.value === undefined || known.value.status !== "APPROVED")) {
        issues.push({
          field: "template.name",
          message: known.value === undefined
            ? `The account has no template ${template.name} in ${template.language}.`
            : `The template ${template.name} (${template.language}) is ${known.value.status}, not APPROVED.`
        })
      } else if (Option.isSome(known) && known.value!.parameters !== parameters.length) {
        issues.push({
          field: "template.parameters",
          message: `must have ${known.value!.parameters} items: the template's body has that many parameters`
        })
      }
      if (issues.length > 0) return yield* Unprocessable.of(issues)
      const send: TemplateSend = { name: template.name, language: template.language, parameters }
      const body = Option.isSome(known) ? known.value!.body : null
      return { send, text: templateText(send, body) } satisfies ResolvedTemplate
    })

    /** For an automated send (an opening, a followup step, a bridge): the template, or none with the reason logged. */
    const resolveForSend = (conversationId: string, template: MessageTemplate, what: string) =>
      resolve(conversationId, template).pipe(
        Effect.map(Option.some),
        Effect.catchTag("Unprocessable", (u) =>
          Effect.as(
            Effect.logWarning(`${what}'s template could not be sent; it is skipped`).pipe(
              Effect.annotateLogs({
                conversation_id: conversationId,
                template: template.name,
                problems: u.validation.map((v) => v.message).join("; ")
              })
            ),
            Option.none<ResolvedTemplate>()
          ))
      )

    return { list, resolve, resolveForSend }
  })
}) {}
