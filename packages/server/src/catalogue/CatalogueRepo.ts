/**
 * The model catalogue seeded by migration (providers, models, agent types, languages, dialects), read
 * only, and the caller's channels for the pipeline options.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { AgentType, AiModel, AiProvider, ConnectedChannel, Dialect, Language, type WorkspaceId } from "@parley/domain"
import { Effect, Option, Schema, Struct } from "effect"

/** A language without its dialects, which are read once for all languages. */
export const LanguageRow = Schema.Struct(Struct.omit(Language.fields, "dialects"))
export type LanguageRow = typeof LanguageRow.Type

/** The catalogue tables a reference (an id in a pipeline's body) can name. */
export type ReferencedTable = "agent_types" | "ai_models" | "languages"

export class CatalogueRepo extends Effect.Service<CatalogueRepo>()("@parley/server/CatalogueRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Server-wide providers and those of the caller's workspaces (docs/agent.md, "Models and providers"). */
    const providers = SqlSchema.findAll({
      Request: Schema.Array(Schema.Number),
      Result: AiProvider,
      execute: (workspaceIds) =>
        sql`select id, slug, name from ai_providers
            where workspace_id is null or workspace_id in ${sql.in(workspaceIds)} order by id`
    })

    const models = SqlSchema.findAll({
      Request: Schema.Struct({ providerId: Schema.Number, workspaceIds: Schema.Array(Schema.Number) }),
      Result: AiModel,
      execute: ({ providerId, workspaceIds }) =>
        sql`
            select m.id, m.ai_provider_id, m.name, m.model, m.input_price_per_million, m.output_price_per_million,
                   m.context_window
            from ai_models m join ai_providers pr on pr.id = m.ai_provider_id
            where m.ai_provider_id = ${providerId}
              and (pr.workspace_id is null or pr.workspace_id in ${sql.in(workspaceIds)}) order by m.id`
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

    /** Models a pipeline of the workspace may name (server-wide and its own), with what they can do. */
    const usableModels = SqlSchema.findAll({
      Request: Schema.Struct({ ids: Schema.Array(Schema.Number), workspaceId: Schema.NullOr(Schema.Number) }),
      Result: Schema.Struct({ id: Schema.Number, model: Schema.String, capabilities: Schema.Array(Schema.String) }),
      execute: ({ ids, workspaceId }) =>
        sql`select m.id, m.model, m.capabilities from ai_models m join ai_providers pr on pr.id = m.ai_provider_id
            where m.id in ${sql.in(ids)} and (pr.workspace_id is null or pr.workspace_id = ${workspaceId})`
    })

    const pipelineActions = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({ count: Schema.Number }),
      execute: (pipelineId) =>
        sql`select count(*)::int as count from actions
            where pipeline_id = ${pipelineId} and is_active and fixed_trigger in ('on_user_message', 'custom')`
    })

    return {
      providers: (workspaceIds: ReadonlyArray<number>) => Effect.orDie(providers(workspaceIds)),
      models: (providerId: number, workspaceIds: ReadonlyArray<number>) =>
        Effect.orDie(models({ providerId, workspaceIds })),
      agentTypes: Effect.orDie(agentTypes(undefined)),
      dialects: Effect.orDie(dialects(undefined)),
      languages: Effect.orDie(languages(undefined)),
      channels: (workspaceIds: ReadonlyArray<WorkspaceId>) => Effect.orDie(channels(workspaceIds)),
      exists: (table: ReferencedTable, id: number) =>
        exists({ table, id }).pipe(Effect.map(Option.isSome), Effect.orDie),
      /** The language of a dialect; none when the dialect does not exist. */
      dialectLanguage: (dialectId: number) =>
        dialectLanguage(dialectId).pipe(Effect.map(Option.map((r) => r.language_id)), Effect.orDie),
      /** Which of `ids` a pipeline of `workspaceId` may name (null: any workspace's), with their capabilities. */
      usableModels: (ids: ReadonlyArray<number>, workspaceId: number | null) =>
        ids.length === 0 ? Effect.succeed([]) : usableModels({ ids, workspaceId }).pipe(Effect.orDie),
      /** Actions of a pipeline the model calls as tools. */
      pipelineActions: (pipelineId: number) =>
        pipelineActions(pipelineId).pipe(Effect.map((r) => r.count), Effect.orDie)
    }
  })
}) {}
