/**
 * Action runs' SQL (rows typed with SqlSchema): what ActionRunsLive reads and records for each step of a run
 * (prepare, attempt). Runs are written by their triggers (ActionRunsEnqueue.ts).
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { VariableDataType, VariableType } from "@parley/domain"
import { Effect, Schema } from "effect"

export const RunGroupRow = Schema.Struct({ id: Schema.Number, group_key: Schema.String })

const Strings = Schema.Record({ key: Schema.String, value: Schema.String })
const Json = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const runFields = {
  id: Schema.Number,
  pipeline_id: Schema.Number,
  action_id: Schema.Number,
  opportunity_id: Schema.NullOr(Schema.Number),
  conversation_id: Schema.NullOr(Schema.Number),
  stage_id: Schema.NullOr(Schema.Number),
  message_id: Schema.NullOr(Schema.String),
  status: Schema.String,
  ai_values: Strings,
  max_attempts: Schema.NullOr(Schema.Number),
  config_version_id: Schema.NullOr(Schema.Number)
}

/**
 * A run with its action as configured when it was triggered; the action's columns are null when that configuration
 * lacks it.
 */
export const RunRow = Schema.Union(
  Schema.Struct({
    ...runFields,
    method: Schema.String,
    url: Schema.String,
    headers: Strings,
    payload: Schema.NullOr(Json),
    is_active: Schema.Boolean,
    max_fires: Schema.NullOr(Schema.Number),
    retries: Schema.Number
  }),
  Schema.Struct({
    ...runFields,
    method: Schema.Null,
    url: Schema.Null,
    headers: Schema.Null,
    payload: Schema.Null,
    is_active: Schema.Null,
    max_fires: Schema.Null,
    retries: Schema.Null
  })
)
export type RunRow = typeof RunRow.Type

export const VariableRow = Schema.Struct({
  name: Schema.String,
  value: Schema.String,
  type: VariableType,
  data_type: VariableDataType,
  is_required: Schema.Boolean
})

/** A run's rendered request, as `attempt` sends it (set when the run is `sending`). */
export const RequestRow = Schema.Struct({
  status: Schema.String,
  request_method: Schema.NullOr(Schema.String),
  request_url: Schema.NullOr(Schema.String),
  request_headers: Schema.NullOr(Strings),
  request_body: Schema.NullOr(Schema.String),
  is_eval: Schema.Boolean
})

/** `from_action`'s lookup: the action's name, and the run's opportunity (else its conversation) to look in. */
export const EarlierResponse = Schema.Struct({
  runId: Schema.Number,
  pipelineId: Schema.Number,
  name: Schema.String,
  opportunityId: Schema.NullOr(Schema.Number),
  conversationId: Schema.NullOr(Schema.Number)
})

export interface AttemptRecord {
  readonly runId: number
  readonly attempt: number
  readonly status: number | null
  readonly duration: number
  readonly error: string | null
  readonly excerpt: string | null
  readonly retryAt: Date | null
  readonly body: string | null
  readonly runStatus: string
  readonly reason: string | null
  readonly finishedAt: Date | null
}

export class ActionRunsRepo extends Effect.Service<ActionRunsRepo>()("@parley/server/ActionRunsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The runs of the groups `keys` selects, in the order they are sent. */
    const groupRuns = (keys: Statement.Fragment) =>
      sql`select r.id, r.group_key from action_runs r where r.group_key in (${keys}) order by r.sort_order, r.id`

    const undispatched = SqlSchema.findAll({
      Request: Schema.Number,
      Result: RunGroupRow,
      execute: (limit) =>
        groupRuns(sql`select group_key from action_runs where dispatched_at is null order by id limit ${limit}`)
    })

    const overdue = SqlSchema.findAll({
      Request: Schema.Number,
      Result: RunGroupRow,
      execute: (olderThanMs) =>
        groupRuns(sql`
          select r2.group_key from action_attempts t join action_runs r2 on r2.id = t.run_id
          where t.retry_at is not null and t.retry_at < now() - make_interval(secs => ${olderThanMs / 1000}) limit 100`)
    })

    /**
     * In prepare's transaction: the run with its action as configured when it was triggered (docs/versions.md), the
     * action's row locked.
     */
    const run = SqlSchema.findOne({
      Request: Schema.Number,
      Result: RunRow,
      execute: (runId) =>
        sql`
          select r.id, r.pipeline_id, r.action_id, r.opportunity_id, r.conversation_id, r.stage_id, r.message_id, r.status, r.ai_values,
                 r.max_attempts, r.config_version_id, a.method, a.url, a.headers, a.payload, a.is_active, a.max_fires, a.retries
          from action_runs r join actions t on t.id = r.action_id
          left join lateral parley_live_actions(r.pipeline_id, r.config_version_id) a on a.id = r.action_id
          where r.id = ${runId}
          for update of t`
    })

    /** How many other runs of the action fired (or are firing) for the opportunity: `max_fires` counts these. */
    const fired = SqlSchema.single({
      Request: Schema.Struct({ runId: Schema.Number, actionId: Schema.Number, opportunityId: Schema.Number }),
      Result: Schema.Struct({ n: Schema.Number }),
      execute: ({ actionId, opportunityId, runId }) =>
        sql`
          select count(*)::int as n from action_runs
          where action_id = ${actionId} and opportunity_id = ${opportunityId} and id <> ${runId}
            and status in ('sending', 'succeeded', 'failed', 'recorded')`
    })

    const variables = SqlSchema.findAll({
      Request: Schema.Struct({
        pipelineId: Schema.Number,
        version: Schema.NullOr(Schema.Number),
        names: Schema.Array(Schema.String)
      }),
      Result: VariableRow,
      execute: ({ names, pipelineId, version }) =>
        sql`
          select name, value, type, data_type, is_required from parley_live_variables(${pipelineId}, ${version})
          where name in ${sql.in(names)}`
    })

    /** `from_system` values: the run's opportunity with its contact and conversation (the run's, else the newest). */
    const opportunityValues = SqlSchema.findOne({
      Request: Schema.Struct({ opportunityId: Schema.Number, conversationId: Schema.NullOr(Schema.Number) }),
      Result: Json,
      execute: ({ conversationId, opportunityId }) =>
        sql`
          select o.id, o.contact_id, o.stage_id, o.pipeline_id, o.name, o.notes, o.status,
                 coalesce(c.custom_name, c.name) as contact_name, c.priority as contact_priority, c.identifier as contact_identifier,
                 coalesce(c.custom_email, c.email) as contact_email, coalesce(c.custom_phone, c.phone) as contact_phone,
                 s.nature,
                 coalesce(${conversationId}, (select co.conversation_id from conversation_opportunity co
                   where co.opportunity_id = o.id order by co.created_at desc limit 1)) as conversation_id
          from opportunities o join contacts c on c.id = o.contact_id join stages s on s.id = o.stage_id
          where o.id = ${opportunityId}`
    })

    const stageValues = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Json,
      execute: (stageId) =>
        sql`
          select s.id, s.pipeline_id, p.name as pipeline_name, s.name, s.sort_order as "order"
          from stages s join pipelines p on p.id = s.pipeline_id where s.id = ${stageId}`
    })

    const messageValues = SqlSchema.findOne({
      Request: Schema.String,
      Result: Json,
      execute: (messageId) =>
        sql`select id, message, is_manual, role, call_type, files, status, error from messages where id = ${messageId}`
    })

    /** `from_action`: the latest answered run of the action `name` for the opportunity, else the conversation. */
    const earlierResponse = SqlSchema.findOne({
      Request: EarlierResponse,
      Result: Schema.Struct({ response_status: Schema.Number, response_body: Schema.NullOr(Schema.String) }),
      execute: (q) =>
        sql`
          select r.response_status, r.response_body from action_runs r join actions a on a.id = r.action_id
          where a.pipeline_id = ${q.pipelineId} and a.name = ${q.name} and r.response_status is not null and r.id <> ${q.runId}
            and ${
          q.opportunityId !== null
            ? sql`r.opportunity_id = ${q.opportunityId}`
            : sql`r.conversation_id = ${q.conversationId}`
        }
          order by r.finished_at desc nulls last, r.id desc limit 1`
    })

    const request = SqlSchema.findOne({
      Request: Schema.Number,
      Result: RequestRow,
      execute: (runId) =>
        sql`select r.status, r.request_method, r.request_url, r.request_headers, r.request_body,
                   (exists (select 1 from conversations c where c.id = r.conversation_id and c.is_eval)
                    or exists (select 1 from opportunities o where o.id = r.opportunity_id and o.is_eval)) as is_eval
            from action_runs r where r.id = ${runId}`
    })

    const attemptMade = SqlSchema.findAll({
      Request: Schema.Struct({ runId: Schema.Number, attempt: Schema.Number }),
      Result: Schema.Struct({ status_code: Schema.NullOr(Schema.Number) }),
      execute: ({ attempt, runId }) =>
        sql`select status_code from action_attempts where run_id = ${runId} and attempt = ${attempt}`
    })

    return {
      undispatched: (limit: number) => Effect.orDie(undispatched(limit)),
      overdue: (olderThanMs: number) => Effect.orDie(overdue(olderThanMs)),
      markDispatched: (runIds: ReadonlyArray<number>) =>
        Effect.orDie(
          Effect.asVoid(
            sql`update action_runs set dispatched_at = now() where id in ${sql.in(runIds)} and dispatched_at is null`
          )
        ),
      run: (runId: number) => Effect.orDie(run(runId)),
      fired: (runId: number, actionId: number, opportunityId: number) =>
        Effect.map(Effect.orDie(fired({ runId, actionId, opportunityId })), (r) => r.n),
      variables: (pipelineId: number, version: number | null, names: ReadonlyArray<string>) =>
        Effect.orDie(variables({ pipelineId, version, names })),
      opportunityValues: (opportunityId: number, conversationId: number | null) =>
        Effect.orDie(opportunityValues({ opportunityId, conversationId })),
      stageValues: (stageId: number) => Effect.orDie(stageValues(stageId)),
      messageValues: (messageId: string) => Effect.orDie(messageValues(messageId)),
      earlierResponse: (q: typeof EarlierResponse.Type) => Effect.orDie(earlierResponse(q)),
      skip: (runId: number, reason: string) =>
        Effect.orDie(Effect.asVoid(sql`
          update action_runs set status = 'skipped', reason = ${reason}, finished_at = now(), updated_at = now() where id = ${runId}`)),
      markSending: (
        runId: number,
        r: { method: string; url: string; headers: Record<string, string>; body: string | null; maxAttempts: number }
      ) =>
        Effect.orDie(Effect.asVoid(sql`
          update action_runs set status = 'sending', request_method = ${r.method}, request_url = ${r.url},
            request_headers = ${
          JSON.stringify(r.headers)
        }::jsonb, request_body = ${r.body}, max_attempts = ${r.maxAttempts}, updated_at = now()
          where id = ${runId}`)),
      request: (runId: number) => Effect.orDie(request(runId)),
      /** an eval's run (docs/evals.md): the rendered request is the record; nothing is sent */
      recordEval: (runId: number) =>
        Effect.orDie(Effect.asVoid(sql`
          update action_runs set status = 'recorded', reason = 'Recorded by an eval run: not sent.', finished_at = now(),
                 updated_at = now() where id = ${runId}`)),
      attemptMade: (runId: number, attempt: number) => Effect.orDie(attemptMade({ runId, attempt })),
      /** An attempt and the run's state after it, in one transaction; an attempt recorded before a restart is kept. */
      recordAttempt: (a: AttemptRecord) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`update action_attempts set retry_at = null where run_id = ${a.runId} and retry_at is not null`
          yield* sql`
            insert into action_attempts (run_id, attempt, status_code, duration_ms, error, response_excerpt, retry_at)
            values (${a.runId}, ${a.attempt}, ${a.status}, ${a.duration}, ${a.error}, ${a.excerpt}, ${a.retryAt})
            on conflict (run_id, attempt) do nothing`
          yield* sql`
            update action_runs set attempts = ${a.attempt}, response_status = ${a.status}, response_body = ${a.body},
              status = ${a.runStatus}, reason = ${a.reason}, finished_at = ${a.finishedAt}, updated_at = now()
            where id = ${a.runId}`
        })).pipe(Effect.orDie)
    }
  })
}) {}
