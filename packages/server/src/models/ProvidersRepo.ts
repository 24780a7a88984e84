/**
 * The one writer of `ai_providers`: model providers as rows, server-wide (`workspace_id` null) or a workspace's own.
 * The key and the extra headers are stored encrypted (AppSecret); reads that answer the API never select them.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { AiProviderId, WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"

/** A provider as the API shows it, plus whether it has headers (their names are decrypted by the service). */
export const ProviderRow = Schema.Struct({
  id: AiProviderId,
  slug: Schema.String,
  kind: Schema.Literal("local", "openai_compatible", "openai", "anthropic", "google"),
  name: Schema.String,
  base_url: Schema.NullOr(Schema.String),
  has_key: Schema.Boolean,
  headers_ciphertext: Schema.NullOr(Schema.String),
  timeout_ms: Schema.NullOr(Schema.Number),
  workspace_id: Schema.NullOr(WorkspaceId),
  charge_credits: Schema.Boolean,
  is_seeded: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type ProviderRow = typeof ProviderRow.Type

/** What a call to the provider needs: its protocol, address and (encrypted) credentials. */
export const ProviderSecretsRow = Schema.Struct({
  id: AiProviderId,
  kind: Schema.String,
  slug: Schema.String,
  base_url: Schema.NullOr(Schema.String),
  api_key_ciphertext: Schema.NullOr(Schema.String),
  headers_ciphertext: Schema.NullOr(Schema.String),
  timeout_ms: Schema.NullOr(Schema.Number),
  updated_at: Schema.String
})
export type ProviderSecretsRow = typeof ProviderSecretsRow.Type

export interface ProviderWrite {
  readonly name?: string | undefined
  readonly base_url?: string | null | undefined
  readonly api_key_ciphertext?: string | null | undefined
  readonly headers_ciphertext?: string | null | undefined
  readonly timeout_ms?: number | null | undefined
  readonly charge_credits?: boolean | undefined
}

const NewProvider = Schema.Struct({
  kind: Schema.String,
  name: Schema.String,
  base_url: Schema.NullOr(Schema.String),
  api_key_ciphertext: Schema.NullOr(Schema.String),
  headers_ciphertext: Schema.NullOr(Schema.String),
  timeout_ms: Schema.NullOr(Schema.Number),
  workspace_id: Schema.NullOr(WorkspaceId),
  charge_credits: Schema.Boolean
})

/** Pipelines (any workspace) that name one of `modelIds`, in their tables or in the version that runs. */
export const PipelineUse = Schema.Struct({ id: Schema.Number, name: Schema.String })

export const pipelinesUsing = (sql: SqlClient.SqlClient, modelIds: Statement.Fragment) =>
  sql`
    select p.id, p.name from pipelines p
    left join pipeline_versions v on v.id = p.live_version_id
    where p.ai_model_id in ${modelIds} or p.fallback_model_id in ${modelIds} or p.vision_model_id in ${modelIds}
       or p.transcription_model_id in ${modelIds}
       or exists (select 1 from jsonb_array_elements(p.model_pool) t where (t ->> 'ai_model_id')::bigint in ${modelIds})
       or (v.config -> 'pipeline' ->> 'ai_model_id')::bigint in ${modelIds}
       or exists (select 1 from jsonb_array_elements(coalesce(v.config -> 'pipeline' -> 'model_pool', '[]')) t
                  where (t ->> 'ai_model_id')::bigint in ${modelIds})
    order by p.id limit 20`

/** Knowledge tables embedding with one of `modelIds`, or being moved to one (docs/api.md, "Embedding models"). */
export const tablesUsing = (sql: SqlClient.SqlClient, modelIds: Statement.Fragment) =>
  sql`
    select id, name from knowledge_tables
    where embedding_model_id in ${modelIds} or reembed_model_id in ${modelIds}
    order by id limit 20`

export class ProvidersRepo extends Effect.Service<ProvidersRepo>()("@parley/server/ProvidersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql`
      select id, slug, kind, name, base_url, api_key_ciphertext is not null as has_key, headers_ciphertext, timeout_ms,
             workspace_id, charge_credits, is_seeded, created_at, updated_at
      from ai_providers`
    /** Server-wide providers and those of the given workspaces. */
    const visible = (workspaceIds: ReadonlyArray<number>) =>
      sql`(workspace_id is null or workspace_id in ${sql.in(workspaceIds)})`

    const list = SqlSchema.findAll({
      Request: Schema.Array(WorkspaceId),
      Result: ProviderRow,
      execute: (workspaceIds) => sql`${select} where ${visible(workspaceIds)} order by id`
    })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ id: AiProviderId, workspaceIds: Schema.Array(WorkspaceId) }),
      Result: ProviderRow,
      execute: ({ id, workspaceIds }) => sql`${select} where id = ${id} and ${visible(workspaceIds)}`
    })

    const secrets = SqlSchema.findOne({
      Request: AiProviderId,
      Result: ProviderSecretsRow,
      execute: (id) =>
        sql`select id, kind, slug, base_url, api_key_ciphertext, headers_ciphertext, timeout_ms, updated_at::text as updated_at
            from ai_providers where id = ${id}`
    })

    /** The slug is the name's, made unique by the id (`ollama-104`): readable in logs and metrics, never reused. */
    const insert = SqlSchema.single({
      Request: NewProvider,
      Result: Schema.Struct({ id: AiProviderId }),
      execute: (r) =>
        sql`
          with id as (select nextval('ai_providers_id_seq') as id)
          insert into ai_providers (id, slug, kind, name, base_url, api_key_ciphertext, headers_ciphertext, timeout_ms,
                                    workspace_id, charge_credits)
          select id.id,
                 coalesce(nullif(trim(both '-' from regexp_replace(lower(${r.name}), '[^a-z0-9]+', '-', 'g')), ''), 'provider')
                   || '-' || id.id,
                 ${r.kind}, ${r.name}, ${r.base_url}, ${r.api_key_ciphertext}, ${r.headers_ciphertext}, ${r.timeout_ms},
                 ${r.workspace_id}, ${r.charge_credits}
          from id returning id`
    })

    const update = (id: number, w: ProviderWrite) => {
      const entries: Array<Statement.Fragment> = []
      if (w.name !== undefined) entries.push(sql`name = ${w.name}`)
      if (w.base_url !== undefined) entries.push(sql`base_url = ${w.base_url}`)
      if (w.api_key_ciphertext !== undefined) entries.push(sql`api_key_ciphertext = ${w.api_key_ciphertext}`)
      if (w.headers_ciphertext !== undefined) entries.push(sql`headers_ciphertext = ${w.headers_ciphertext}`)
      if (w.timeout_ms !== undefined) entries.push(sql`timeout_ms = ${w.timeout_ms}`)
      if (w.charge_credits !== undefined) entries.push(sql`charge_credits = ${w.charge_credits}`)
      // clock_timestamp: two updates in one transaction still make two revisions (a changed key builds a new client)
      return sql`update ai_providers set ${sql.csv([...entries, sql`updated_at = clock_timestamp()`])} where id = ${id}`
        .pipe(Effect.asVoid)
    }

    const pipelinesUsingProvider = SqlSchema.findAll({
      Request: AiProviderId,
      Result: PipelineUse,
      execute: (id) => pipelinesUsing(sql, sql`(select id from ai_models where ai_provider_id = ${id})`)
    })

    const tablesUsingProvider = SqlSchema.findAll({
      Request: Schema.Number,
      Result: PipelineUse,
      execute: (id) => tablesUsing(sql, sql`(select id from ai_models where ai_provider_id = ${id})`)
    })

    /** After its models (ModelsRepo.removeOfProvider), in the same transaction. */
    const remove = (id: number) => sql`delete from ai_providers where id = ${id}`.pipe(Effect.asVoid)

    return { list, find, secrets, insert, update, pipelinesUsingProvider, tablesUsingProvider, remove }
  })
}) {}
