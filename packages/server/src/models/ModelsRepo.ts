/**
 * The one writer of `ai_models`: the models a pipeline may name. A model belongs to its provider's workspace (or is
 * server-wide with it), so every read joins the provider for visibility.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { AiModelId, AiProviderId, ModelCapabilityLiteral, WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"
import { pipelinesUsing, PipelineUse, tablesUsing } from "./ProvidersRepo.js"

export const ModelRow = Schema.Struct({
  id: AiModelId,
  ai_provider_id: AiProviderId,
  name: Schema.String,
  model: Schema.String,
  input_price: Schema.Number,
  output_price: Schema.Number,
  context_window: Schema.Number,
  capabilities: Schema.Array(ModelCapabilityLiteral),
  workspace_id: Schema.NullOr(WorkspaceId),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type ModelRow = typeof ModelRow.Type

export interface ModelWrite {
  readonly name?: string | undefined
  readonly model?: string | undefined
  readonly input_price?: number | undefined
  readonly output_price?: number | undefined
  readonly context_window?: number | undefined
  readonly capabilities?: ReadonlyArray<string> | undefined
}

const NewModel = Schema.Struct({
  ai_provider_id: AiProviderId,
  name: Schema.String,
  model: Schema.String,
  input_price: Schema.Number,
  output_price: Schema.Number,
  context_window: Schema.Number,
  capabilities: Schema.Array(Schema.String)
})

export class ModelsRepo extends Effect.Service<ModelsRepo>()("@parley/server/ModelsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql`
      select m.id, m.ai_provider_id, m.name, m.model, m.input_price_per_million::float8 as input_price,
             m.output_price_per_million::float8 as output_price, m.context_window, m.capabilities, pr.workspace_id,
             m.created_at, m.updated_at
      from ai_models m join ai_providers pr on pr.id = m.ai_provider_id`
    const visible = (workspaceIds: ReadonlyArray<number>) =>
      sql`(pr.workspace_id is null or pr.workspace_id in ${sql.in(workspaceIds)})`

    const list = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceIds: Schema.Array(Schema.Number), providerId: Schema.NullOr(Schema.Number) }),
      Result: ModelRow,
      execute: ({ providerId, workspaceIds }) =>
        sql`${select} where ${visible(workspaceIds)} ${
          providerId === null ? sql`` : sql`and m.ai_provider_id = ${providerId}`
        } order by m.id`
    })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ id: AiModelId, workspaceIds: Schema.Array(WorkspaceId) }),
      Result: ModelRow,
      execute: ({ id, workspaceIds }) => sql`${select} where m.id = ${id} and ${visible(workspaceIds)}`
    })

    /** Models a pipeline of `workspaceId` may name, among `ids`: server-wide ones and the workspace's own. */
    const usableBy = SqlSchema.findAll({
      Request: Schema.Struct({ ids: Schema.Array(Schema.Number), workspaceId: WorkspaceId }),
      Result: ModelRow,
      execute: ({ ids, workspaceId }) => sql`${select} where m.id in ${sql.in(ids)} and ${visible([workspaceId])}`
    })

    const insert = SqlSchema.single({
      Request: NewModel,
      Result: Schema.Struct({ id: AiModelId }),
      execute: (r) =>
        sql`
          insert into ai_models (ai_provider_id, name, model, input_price_per_million, output_price_per_million,
                                 context_window, capabilities)
          values (${r.ai_provider_id}, ${r.name}, ${r.model}, ${r.input_price}, ${r.output_price}, ${r.context_window},
                  ${r.capabilities}::text[])
          returning id`
    })

    const update = (id: number, w: ModelWrite) => {
      const entries: Array<Statement.Fragment> = []
      if (w.name !== undefined) entries.push(sql`name = ${w.name}`)
      if (w.model !== undefined) entries.push(sql`model = ${w.model}`)
      if (w.input_price !== undefined) entries.push(sql`input_price_per_million = ${w.input_price}`)
      if (w.output_price !== undefined) entries.push(sql`output_price_per_million = ${w.output_price}`)
      if (w.context_window !== undefined) entries.push(sql`context_window = ${w.context_window}`)
      if (w.capabilities !== undefined) entries.push(sql`capabilities = ${w.capabilities}::text[]`)
      return sql`update ai_models set ${sql.csv([...entries, sql`updated_at = now()`])} where id = ${id}`.pipe(
        Effect.asVoid
      )
    }

    /** Whether the provider already has a model of that name (the catalogue's unique pair). */
    const nameTaken = SqlSchema.findOne({
      Request: Schema.Struct({ providerId: Schema.Number, model: Schema.String, except: Schema.NullOr(Schema.Number) }),
      Result: Schema.Struct({ id: AiModelId }),
      execute: ({ except, model, providerId }) =>
        sql`select id from ai_models where ai_provider_id = ${providerId} and model = ${model}
            and (${except}::bigint is null or id <> ${except})`
    })

    const pipelinesUsingModel = SqlSchema.findAll({
      Request: AiModelId,
      Result: PipelineUse,
      execute: (id) => pipelinesUsing(sql, sql`(${id})`)
    })

    const tablesUsingModel = SqlSchema.findAll({
      Request: Schema.Number,
      Result: PipelineUse,
      execute: (id) => tablesUsing(sql, sql`(${id})`)
    })

    const remove = (id: number) => sql`delete from ai_models where id = ${id}`.pipe(Effect.asVoid)
    const removeOfProvider = (providerId: number) =>
      sql`delete from ai_models where ai_provider_id = ${providerId}`.pipe(Effect.asVoid)

    return {
      list,
      find,
      usableBy,
      insert,
      update,
      nameTaken,
      pipelinesUsingModel,
      tablesUsingModel,
      remove,
      removeOfProvider
    }
  })
}) {}
