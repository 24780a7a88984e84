/**
 * The model catalogue seeded by migration (providers, models, agent types, languages, dialects), read
 * only, and the caller's channels for the pipeline options.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { AgentType, AiModel, AiProvider, ConnectedChannel, Dialect, Language, type WorkspaceId } from "@parley/domain"
import { Effect, flow, Option, Schema, Struct } from "effect"

/** A language without its dialects, which are read once for all languages. */
export const LanguageRow = Schema.Struct(Struct.omit(Language.fields, "dialects"))
export type LanguageRow = typeof LanguageRow.Type

/** The catalogue tables a reference (an id in a pipeline's body) can name. */
export type ReferencedTable = "agent_types" | "ai_models" | "languages"

export class CatalogueRepo extends Effect.Service<CatalogueRepo>()("@parley/server/CatalogueRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const providers = SqlSchema.findAll({
      Request: Schema.Void,
      Result: AiProvider,
      execute: () => sql`select id, slug, name from ai_providers order by id`
    })

    const models = SqlSchema.findAll({
      Request: Schema.Number,
      Result: AiModel,
      execute: (providerId) =>
        sql`
            select id, ai_provider_id, name, model, input_price_per_million, output_price_per_million, context_window
            from ai_models where ai_provider_id = ${providerId} order by id`
    })

    const agentTypes = SqlSchema.findAll({
      Request: Schema.Void,
      Result: AgentType,
      execute: () => sql`select id, name, description from agent_types order by id`
    })

    const dialects = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Dialect,
      execute: () => sql`select id, language_id, code, name from dialects order by id`
    })

    const languages = SqlSchema.findAll({
      Request: Schema.Void,
      Result: LanguageRow,
      execute: () => sql`select id, code, name from languages order by id`
    })

    const channels = SqlSchema.findAll({
      Request: Schema.Array(Schema.Number),
      Result: ConnectedChannel,
      execute: (workspaceIds) =>
        sql`
        select id, kind, name, pipeline_id, is_active from channels
        where workspace_id in ${sql.in(workspaceIds)} order by id`
    })

    // `select 1`: any row at all says the id exists
    const exists = SqlSchema.findOne({
      Request: Schema.Struct({ table: Schema.Literal("agent_types", "ai_models", "languages"), id: Schema.Number }),
      Result: Schema.Struct({}),
      execute: ({ id, table }) => sql`select 1 from ${sql(table)} where id = ${id}`
    })

    const dialectLanguage = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ language_id: Schema.Number }),
      execute: (dialectId) => sql`select language_id from dialects where id = ${dialectId}`
    })

    const existingModels = SqlSchema.findAll({
      Request: Schema.Array(Schema.Number),
      Result: Schema.Struct({ id: Schema.Number }),
      execute: (ids) => sql`select id from ai_models where id in ${sql.in(ids)}`
    })

    return {
      providers: Effect.orDie(providers(undefined)),
      models: flow(models, Effect.orDie),
      agentTypes: Effect.orDie(agentTypes(undefined)),
      dialects: Effect.orDie(dialects(undefined)),
      languages: Effect.orDie(languages(undefined)),
      channels: (workspaceIds: ReadonlyArray<WorkspaceId>) => Effect.orDie(channels(workspaceIds)),
      exists: (table: ReferencedTable, id: number) =>
        exists({ table, id }).pipe(Effect.map(Option.isSome), Effect.orDie),
      /** The language of a dialect; none when the dialect does not exist. */
      dialectLanguage: (dialectId: number) =>
        dialectLanguage(dialectId).pipe(Effect.map(Option.map((r) => r.language_id)), Effect.orDie),
      /** Which of `ids` are models of the catalogue. */
      existingModels: (ids: ReadonlyArray<number>) =>
        existingModels(ids).pipe(Effect.map((rows) => rows.map((r) => r.id)), Effect.orDie)
    }
  })
}) {}
