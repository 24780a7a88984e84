import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ok } from "./Contract.js"
import { call, seedUser } from "./TestServer.js"
import { webCredentials } from "./WebChat.js"

/** A web channel with a callback URL, and one assistant reply on one of its conversations. */
export const replyOn = (callbackUrl: string) =>
  Effect.gen(function*() {
    const owner = yield* seedUser()
    const pipeline = yield* call("/api/user/pipelines", {
      method: "POST",
      token: owner.token,
      body: { name: "Support", agent_type_id: 2, ai_model_id: 1, language_id: 1 }
    })
    const pipelineId = ok(pipeline, "pipelines.create").id
    yield* call(`/api/user/pipelines/${pipelineId}/stages`, {
      method: "POST",
      token: owner.token,
      body: { name: "Open", nature: "neutral", order: 1 }
    })
    const channel = webCredentials(ok(
      yield* call("/api/user/channels", {
        method: "POST",
        token: owner.token,
        body: { kind: "web", pipeline_id: pipelineId, callback_url: callbackUrl }
      }),
      "channels.create"
    ))
    const sql = yield* SqlClient.SqlClient
    const [contact] = yield* sql<{ id: number }>`
      insert into contacts (workspace_id, identifier) values (${owner.workspace_id}, 'visitor-42') returning id`
    const [conversation] = yield* sql<{ id: number }>`
      insert into conversations (workspace_id, contact_id, channel_id, external_chat_id)
      values (${owner.workspace_id}, ${contact!.id}, ${channel.id}, 'visitor-42') returning id`
    const messageId = `01TESTREPLY${Date.now()}${Math.floor(Math.random() * 1e6)}`.slice(0, 26)
    yield* sql`
      insert into messages (id, workspace_id, conversation_id, contact_id, channel_id, role, status, message, external_chat_id)
      values (${messageId}, ${owner.workspace_id}, ${conversation!.id}, ${
      contact!.id
    }, ${channel.id}, 'assistant', 'sent_to_user',
              'Happy to help!', 'visitor-42')`
    return { owner, channel, messageId }
  })

/** The attempts that have their outcome (an attempt is logged before it is sent, "In progress" until then). */
export const attempts = (messageId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ attempt: number; status_code: number | null; error: string | null; run: number }>`
      select attempt, status_code, error, run from webhook_deliveries
      where message_id = ${messageId} and not (status_code is null and error = 'In progress') order by id`
  ).pipe(Effect.orDie)
