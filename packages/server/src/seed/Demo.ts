/**
 * First run on an empty embedded database: a demo workspace to try everything with one curl. The
 * credentials are kept in `<data dir>/demo-credentials.json` (mode 0600) so later starts can print them.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  type Actor,
  type ChannelId,
  CurrentActor,
  type PipelineId,
  Scopes,
  TokenId,
  UserId,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Channels } from "../channels/Channels.js"
import { AppConfig } from "../config/AppConfig.js"
import { Identity } from "../identity/Identity.js"
import { randomBase62 } from "../identity/Secrets.js"
import { Knowledge } from "../knowledge/Knowledge.js"
import { Pipelines } from "../pipelines/Pipelines.js"
import { progress } from "../StartupProgress.js"

export interface DemoCredentials {
  readonly email: string
  readonly password: string
  readonly token: string
  readonly workspace_id: WorkspaceId
  readonly pipeline_id: PipelineId
  readonly channel: { readonly id: ChannelId; readonly client_id: string; readonly client_secret: string }
  /**
   * The website widget channel the demo page at `/` embeds; its secret signs the replies' webhooks to `/demo/webhook`.
   */
  readonly widget?: { readonly id: ChannelId; readonly client_id: string; readonly client_secret: string }
  /** The simulated WhatsApp channel (docs/channels.md): the demo page links to its phone, `simulator_path`. */
  readonly whatsapp?: { readonly id: ChannelId; readonly simulator_path: string }
}

export const demoCredentialsPath = (dataDir: string) => Path.join(dataDir, "demo-credentials.json")

export const readDemoCredentials = (dataDir: string): DemoCredentials | undefined => {
  try {
    return JSON.parse(Fs.readFileSync(demoCredentialsPath(dataDir), "utf8")) as DemoCredentials
  } catch {
    return undefined
  }
}

/** Where the demo widget may be used from, and where its replies' webhooks go: this server's own API address. */
const demoWidgetSettings = (api: string, publicUrl: string | undefined) => {
  const port = new URL(api).port
  const origins = new Set([new URL(api).origin, `http://localhost:${port}`, `http://127.0.0.1:${port}`])
  if (publicUrl !== undefined) origins.add(new URL(publicUrl).origin)
  return { allowed_origins: [...origins], callback_url: `${publicUrl ?? api}/demo/webhook` }
}

/**
 * The demo's website widget channel: made on first run (or added to a demo seeded before widgets
 * existed), and on every start pointed at the address this server serves on, which may change.
 */
const demoWidget = (credentials: DemoCredentials, api: string | undefined) =>
  Effect.gen(function*() {
    if (api === undefined) return credentials
    const config = yield* AppConfig
    const channels = yield* Channels
    const sql = yield* SqlClient.SqlClient
    const ownerOf = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ user_id: UserId, token_id: TokenId }),
      execute: (email) =>
        sql`
      select u.id as user_id, t.id as token_id from users u join access_tokens t on t.user_id = u.id
      where u.email = ${email} order by t.id limit 1`
    })
    const found = yield* ownerOf(credentials.email).pipe(Effect.orDie)
    // the demo user gone or without a token: leave the demo as it is
    if (Option.isNone(found)) return credentials
    const owner = found.value
    const actor: Actor = {
      userId: owner.user_id,
      authenticatedUserId: owner.user_id,
      tokenId: owner.token_id,
      scopes: Scopes,
      workspaceIds: [credentials.workspace_id],
      defaultWorkspaceId: credentials.workspace_id
    }
    const settings = demoWidgetSettings(api, Option.getOrUndefined(config.publicUrl))
    let updated = credentials
    if (credentials.widget !== undefined) {
      yield* channels.update(credentials.widget.id, settings).pipe(
        Effect.provideService(CurrentActor, actor),
        Effect.catchAll(() => Effect.void)
      )
    } else {
      const widget = yield* channels.create({
        kind: "widget",
        name: "Demo website widget",
        pipeline_id: credentials.pipeline_id,
        ...settings
      }).pipe(Effect.provideService(CurrentActor, actor), Effect.orDie)
      updated = {
        ...updated,
        widget: { id: widget.id, client_id: widget.client_id!, client_secret: widget.client_secret! }
      }
    }
    if (credentials.whatsapp === undefined) {
      // a WhatsApp number played by the simulator, so the demo shows a messaging channel with no Meta account
      const whatsapp = yield* channels.create({
        kind: "whatsapp",
        name: "Demo WhatsApp (simulator)",
        pipeline_id: credentials.pipeline_id,
        credentials: { simulator: true }
      }).pipe(Effect.provideService(CurrentActor, actor), Effect.orDie)
      updated = {
        ...updated,
        whatsapp: { id: whatsapp.id, simulator_path: new URL(whatsapp.simulator_url!).pathname }
      }
    }
    if (updated !== credentials) {
      Fs.writeFileSync(demoCredentialsPath(config.dataDir), JSON.stringify(updated, null, 2), { mode: 0o600 })
    }
    return updated
  })

/** The demo agent's knowledge: what it may tell a prospect, one answer a row. */
const demoKnowledge: ReadonlyArray<string> = [
  "Parley runs AI agents that hold sales and support conversations with your contacts on web chat.",
  "The Starter plan costs 49 euros per month and includes one pipeline.",
  "The Growth plan costs 199 euros per month and adds Smart Routing and knowledge tables.",
  "Parley is self-hosted: you host it on your own server with one command, and all your data is stored in your own Postgres.",
  "A demo call takes 30 minutes and can be booked on any weekday."
]

/** Seeds once, when the database has no user yet; returns the credentials either way (if kept). */
export const seedDemo = (api: string | undefined) =>
  seedDemoWorkspace.pipe(
    Effect.flatMap((credentials) =>
      credentials === undefined ? Effect.succeed(undefined) : demoWidget(credentials, api)
    )
  )

const seedDemoWorkspace = Effect.gen(function*() {
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const identity = yield* Identity
  const pipelines = yield* Pipelines
  const channels = yield* Channels
  const knowledge = yield* Knowledge
  const users = yield* sql<{ n: number }>`select count(*)::int as n from users`.pipe(
    Effect.map((rows) => rows[0]!.n),
    Effect.orDie
  )
  if (users > 0) return readDemoCredentials(config.dataDir)
  yield* progress("Seeding the demo workspace (first start)")

  const email = "demo@parley.local"
  const password = randomBase62(16)
  const user = yield* identity.createUser({ email, password, name: "Demo User", workspaceName: "Demo workspace" })
  yield* identity.setWorkspace(user.workspace_id, {
    credits: 100,
    training_credits: 1000,
    is_subscription_active: true
  })
  const token = yield* identity.createToken({ email, scopes: Scopes, name: "Demo token (every scope)" })
  const actor: Actor = {
    userId: user.user_id,
    authenticatedUserId: user.user_id,
    tokenId: token.id,
    scopes: Scopes,
    workspaceIds: [user.workspace_id],
    defaultWorkspaceId: user.workspace_id
  }
  const { pipeline, channel } = yield* Effect.gen(function*() {
    const { data: pipeline } = yield* pipelines.create({
      name: "Demo sales agent",
      description: "Answers questions about Parley and books a demo call.",
      persona: "A friendly, concise sales assistant for Parley.",
      // instructions are followed, never said; what the agent says about Parley is in the knowledge table below
      instructions: [
        "Greet the contact, find out what they need and answer from the knowledge about Parley.",
        "When the contact wants to see Parley, offer a demo call."
      ].join("\n"),
      rag_mode: "hybrid",
      no_of_relevant_points: 2,
      agent_type_id: 1 as never,
      ai_model_id: 1 as never,
      language_id: 1 as never,
      dialect_id: 1 as never
    })
    yield* pipelines.createStage(pipeline.id, {
      name: "New lead",
      nature: "neutral",
      order: 1,
      instructions: "Find out what the contact is looking for.",
      is_opening_message: true,
      opening_message_type: "static",
      static_opening_message: "Hi! I'm Parley's demo agent. What brings you here today?"
    })
    yield* pipelines.createStage(pipeline.id, {
      name: "Demo booked",
      nature: "won",
      order: 2,
      enter_condition: "The contact asks to book a demo call."
    })
    yield* pipelines.createStage(pipeline.id, {
      name: "Not interested",
      nature: "lost",
      order: 3,
      enter_condition: "The contact says they are not interested or asks us to stop writing."
    })
    const table = yield* knowledge.create({
      name: "About Parley",
      description: "What the demo agent may tell a prospect",
      columns: [{
        name: "answer",
        data_type: "string",
        order: 1,
        is_searchable: true,
        is_retrievable: true,
        is_filterable: false,
        is_unique: false
      }]
    })
    yield* knowledge.upsert(table.id, demoKnowledge.map((answer, i) => ({ default_id: `about-${i + 1}`, answer })))
    yield* pipelines.update(pipeline.id, { attach_knowledge_table_ids: [table.id] })
    const channel = yield* channels.create({ kind: "web", name: "Demo web chat", pipeline_id: pipeline.id })
    return { pipeline, channel }
  }).pipe(Effect.provideService(CurrentActor, actor), Effect.orDie)

  const credentials: DemoCredentials = {
    email,
    password,
    token: token.token,
    workspace_id: user.workspace_id,
    pipeline_id: pipeline.id,
    channel: { id: channel.id, client_id: channel.client_id!, client_secret: channel.client_secret! }
  }
  Fs.mkdirSync(config.dataDir, { recursive: true })
  Fs.writeFileSync(demoCredentialsPath(config.dataDir), JSON.stringify(credentials, null, 2), { mode: 0o600 })
  return credentials
}).pipe(Effect.withSpan("Demo.seed"))
