/**
 * `event_webhooks`, the outbox `workspace_events`, `event_deliveries` and their attempts (migration 0018):
 * their only writer (the triggers aside, which write `workspace_events` with the rows that cause them).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { EventDelivery, EventWebhook, EventWebhookId, type WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"

const WebhookRow = Schema.Struct({ ...EventWebhook.fields, secret_ciphertext: Schema.String })

const NewWebhook = Schema.Struct({
  workspace_id: Schema.Number,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  events: Schema.Array(Schema.String),
  is_active: Schema.Boolean,
  secret_ciphertext: Schema.String
})

/** A delivery due now, with what it posts. */
export const DueDelivery = Schema.Struct({
  id: Schema.Number,
  event_id: Schema.Number,
  type: Schema.String,
  payload: Schema.Unknown,
  created_at: Schema.String,
  attempts: Schema.Number,
  url: Schema.String,
  secret_ciphertext: Schema.String
})
export type DueDelivery = typeof DueDelivery.Type

export class EventWebhooksRepo extends Effect.Service<EventWebhooksRepo>()("@parley/server/EventWebhooksRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns =
      sql`id, workspace_id, url, description, events, is_active, created_at, updated_at, secret_ciphertext`

    const list = SqlSchema.findAll({
      Request: Schema.Array(Schema.Number),
      Result: WebhookRow,
      execute: (workspaceIds) =>
        sql`select ${columns} from event_webhooks where workspace_id in ${sql.in(workspaceIds)} order by id`
    })
    const find = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, workspaceIds: Schema.Array(Schema.Number) }),
      Result: WebhookRow,
      execute: ({ id, workspaceIds }) =>
        sql`select ${columns} from event_webhooks where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })
    const deliveries = SqlSchema.findAll({
      Request: Schema.Number,
      Result: EventDelivery,
      execute: (webhookId) =>
        sql`
          select d.id, 'evt_' || d.event_id as event_id, e.type, d.status, d.attempts,
                 case when d.status = 'pending' then d.next_attempt_at end as next_attempt_at,
                 d.last_status_code, d.last_error, d.delivered_at, d.created_at
          from event_deliveries d join workspace_events e on e.id = d.event_id
          where d.webhook_id = ${webhookId} order by d.id desc limit 100`
    })
    const insert = SqlSchema.single({
      Request: NewWebhook,
      Result: Schema.Struct({ id: EventWebhookId }),
      execute: (row) =>
        sql`
          insert into event_webhooks (workspace_id, url, description, events, is_active, secret_ciphertext)
          values (${row.workspace_id}, ${row.url}, ${row.description}, ${row.events}::text[], ${row.is_active}, ${row.secret_ciphertext})
          returning id`
    })
    const unfannedEvents = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: Schema.Number }),
      execute: () =>
        sql`select id from workspace_events where fanned_out_at is null order by id limit 200 for update skip locked`
    })
    const claimDue = SqlSchema.findAll({
      Request: Schema.Struct({ limit: Schema.Number, leaseSeconds: Schema.Number }),
      Result: DueDelivery,
      execute: ({ leaseSeconds, limit }) =>
        sql`
          update event_deliveries d set next_attempt_at = now() + ${leaseSeconds}::int * interval '1 second'
          from workspace_events e, event_webhooks w
          where d.id in (select id from event_deliveries where status = 'pending' and next_attempt_at <= now()
                         order by next_attempt_at, id limit ${limit} for update skip locked)
            and e.id = d.event_id and w.id = d.webhook_id
          returning d.id, d.event_id, e.type, e.payload, e.created_at, d.attempts, w.url, w.secret_ciphertext`
    })

    return {
      list: (workspaceIds: ReadonlyArray<WorkspaceId>) => Effect.orDie(list(workspaceIds)),
      find: (id: EventWebhookId, workspaceIds: ReadonlyArray<WorkspaceId>) => Effect.orDie(find({ id, workspaceIds })),
      insert: (row: typeof NewWebhook.Type) => insert(row).pipe(Effect.map((r) => r.id), Effect.orDie),
      update: (
        id: EventWebhookId,
        set: {
          url?: string | undefined
          description?: string | null | undefined
          events?: ReadonlyArray<string> | undefined
          is_active?: boolean | undefined
        }
      ) =>
        sql`
          update event_webhooks set ${
          sql.csv([
            ...(set.url === undefined ? [] : [sql`url = ${set.url}`]),
            ...(set.description === undefined ? [] : [sql`description = ${set.description}`]),
            ...(set.events === undefined ? [] : [sql`events = ${set.events}::text[]`]),
            ...(set.is_active === undefined ? [] : [sql`is_active = ${set.is_active}`]),
            sql`updated_at = now()`
          ])
        } where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),
      remove: (id: EventWebhookId) =>
        sql`delete from event_webhooks where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),
      deliveries: (webhookId: EventWebhookId) => Effect.orDie(deliveries(webhookId)),

      /** Each new event to every active webhook of its workspace subscribed to its type, once. */
      fanOut: sql.withTransaction(Effect.gen(function*() {
        const events = yield* unfannedEvents(undefined)
        if (events.length === 0) return 0
        const ids = events.map((e) => e.id)
        yield* sql`
          insert into event_deliveries (webhook_id, event_id)
          select w.id, e.id from workspace_events e
          join event_webhooks w on w.workspace_id = e.workspace_id and w.is_active
            and (cardinality(w.events) = 0 or e.type = any (w.events))
          where e.id in ${sql.in(ids)}
          on conflict (webhook_id, event_id) do nothing`
        yield* sql`update workspace_events set fanned_out_at = now() where id in ${sql.in(ids)}`
        return ids.length
      })).pipe(Effect.orDie),

      /** Deliveries due now, oldest first, claimed by pushing their next attempt out while they are tried. */
      claimDue: (limit: number, leaseSeconds: number) => Effect.orDie(claimDue({ limit, leaseSeconds })),

      /** One attempt's outcome: delivered, retried after `retryInSeconds`, or failed for good (null). */
      record: (delivery: number, attempt: number, outcome: {
        readonly statusCode: number | null
        readonly error: string | null
        readonly durationMs: number
        readonly delivered: boolean
        readonly retryInSeconds: number | null
      }) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`
            insert into event_delivery_attempts (delivery_id, attempt, status_code, error, duration_ms)
            values (${delivery}, ${attempt}, ${outcome.statusCode}, ${outcome.error}, ${outcome.durationMs})`
          const status = outcome.delivered ? "delivered" : outcome.retryInSeconds === null ? "failed" : "pending"
          yield* sql`
            update event_deliveries set attempts = ${attempt}, status = ${status}, last_status_code = ${outcome.statusCode},
              last_error = ${outcome.error}, delivered_at = ${outcome.delivered ? sql`now()` : sql`null`},
              next_attempt_at = now() + ${outcome.retryInSeconds ?? 0}::int * interval '1 second'
            where id = ${delivery}`
        })).pipe(Effect.orDie)
    }
  })
}) {}
