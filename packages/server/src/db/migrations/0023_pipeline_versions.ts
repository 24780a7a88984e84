import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The configuration tables a version snapshots, each with the order its rows are stored in. */
const sections = [
  { key: "stages", table: "stages", order: "sort_order, id" },
  { key: "variables", table: "variables", order: "id" },
  { key: "actions", table: "actions", order: "sort_order, id" },
  { key: "followups", table: "followups", order: "stage_id" },
  { key: "knowledge_tables", table: "pipeline_knowledge_tables", order: "knowledge_table_id" }
] as const

/** Columns of `pipelines` that are the pipeline's state rather than its configuration: never taken from a version. */
const pipelineState =
  "array['id', 'workspace_id', 'status', 'is_archived', 'live_version_id', 'is_publish_gated', 'created_at', 'updated_at']"

/**
 * Which configuration runs: `p_override` when given (an eval's: 0 the tables, else a version id), else
 * the pipeline's live version when its workspace has drafts on, else null (the tables).
 */
const resolved = `(select case when p_override is not null then nullif(p_override, 0)
  else (select p.live_version_id from pipelines p join workspaces w on w.id = p.workspace_id
        where p.id = p_pipeline and w.is_drafts_enabled) end as version_id)`

/** A table's rows of the pipeline as they run: the tables', or the version's in the same row type. */
const liveRows = (table: string) => `
  create function parley_live_${
  table === "pipeline_knowledge_tables" ? "knowledge_tables" : table
}(p_pipeline bigint, p_override bigint default null)
  returns setof ${table} language sql stable as $$
    select r.* from ${resolved} cv cross join lateral (
      select t.* from ${table} t where cv.version_id is null and t.pipeline_id = p_pipeline
      union all
      select x.* from pipeline_versions v
      cross join lateral jsonb_populate_recordset(null::${table}, v.config -> '${
  sections.find((s) => s.table === table)!.key
}') x
      where v.id = cv.version_id and v.pipeline_id = p_pipeline
    ) r
  $$;`

/**
 * Pipeline versions (docs/versions.md). The configuration tables stay the draft every endpoint edits; a
 * version is an immutable snapshot of them (each row as `to_jsonb` of its table, timestamps left out), read
 * back with `jsonb_populate_record(set)`. With the workspace's `is_drafts_enabled` on, the engine reads a
 * published pipeline's configuration from its live version through the `parley_live_*` functions (single
 * SELECTs, so the planner inlines them); off, or before a first publish, from the tables as before.
 * A column added to a configuration table later reads as null from older snapshots (the pipeline row's
 * from the table): such a migration should fill it into `pipeline_versions.config` too.
 * An eval's opportunity names what it plays in `config_version_id` (0 the tables, else a version).
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table workspaces add column is_drafts_enabled boolean not null default false;

    create table pipeline_versions (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      number integer not null,
      config jsonb not null,
      config_hash text not null,
      published_at timestamptz not null default now(),
      published_by_user_id bigint references users (id) on delete set null,
      published_by text not null,
      source text not null check (source in ('publish', 'rollback')),
      rolled_back_from integer,
      unique (pipeline_id, number)
    );

    alter table pipelines
      add column live_version_id bigint references pipeline_versions (id) on delete set null,
      add column is_publish_gated boolean not null default false;

    alter table opportunities add column config_version_id bigint;

    alter table eval_runs
      add column version_id bigint references pipeline_versions (id) on delete set null,
      add column config_hash text;

    -- the draft's configuration as a version stores it
    create function parley_pipeline_config(p_pipeline bigint) returns jsonb language sql stable as $$
      select jsonb_build_object(
        'pipeline', (select to_jsonb(p) - ${pipelineState} from pipelines p where p.id = p_pipeline),
        ${
    sections.map((s) =>
      `'${s.key}', (select coalesce(jsonb_agg(to_jsonb(t) - 'created_at' - 'updated_at' order by ${
        s.order.split(", ").map((c) => `t.${c}`).join(", ")
      }), '[]')
                      from ${s.table} t where t.pipeline_id = p_pipeline)`
    ).join(",\n        ")
  })
    $$;

    create function parley_live_pipeline(p_pipeline bigint, p_override bigint default null)
    returns setof pipelines language sql stable as $$
      select r.* from pipelines p
      cross join ${resolved} cv
      left join pipeline_versions v on v.id = cv.version_id and v.pipeline_id = p.id
      cross join lateral jsonb_populate_record(p, coalesce((v.config -> 'pipeline') - ${pipelineState}, '{}')) r
      where p.id = p_pipeline
    $$;

    ${sections.map((s) => liveRows(s.table)).join("\n")}
  `))
