/**
 * Issue 40: model providers and models as data, through the real server against a local model server that speaks
 * OpenAI's Chat Completions (FakeModelServer). A workspace adds its own provider (the key sealed, never answered),
 * its models, and a pipeline replies through them at the workspace's prices; another workspace sees none of it; a
 * wrong key or an unreachable URL is a 422 when saved; the check says what works; a model in use is not deleted; a
 * failing model hands the reply to the pipeline's fallback model; a voice note is transcribed and an image described
 * before the turn.
 */
import { expect, layer } from "@effect/vitest"
import { Cause, Effect, Layer, Logger } from "effect"
import { type FakeModelServer, fakeModelServer } from "./support/FakeModelServer.js"
import { createStage, del, get, linkWebChannel, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { basic, say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

const KEY = "sk-local-secret-4711"
let fake: FakeModelServer

/** Every log line of the server with its cause, to show that no key reaches one. */
const logged: Array<string> = []
const CaptureLogs = Logger.add(Logger.make(({ cause, message }) => {
  logged.push(`${Array.isArray(message) ? message.join(" ") : String(message)} ${Cause.pretty(cause)}`)
}))

const Server = Layer.unwrapScoped(
  Effect.map(
    fakeModelServer({
      apiKey: KEY,
      geminiKey: "gm-key-1",
      models: ["llama3.1:8b", { id: "gemma:2b", tools: false }]
    }),
    (f) => {
      fake = f
      return TestServerLive({ ENGINE_SWEEP_INTERVAL_MS: "1000" })
    }
  )
).pipe(Layer.provide(CaptureLogs))

type Caller = { readonly token: string; readonly workspace_id: number }

/** An error answer's envelope, as the tests read it. */
const envelope = (r: { readonly body: unknown }) =>
  r.body as { readonly message: string; readonly validation: ReadonlyArray<{ field: string; message: string }> }

const addProvider = (who: Caller, body: Record<string, unknown> = {}) =>
  post(who, "/api/user/ai-providers", {
    kind: "openai_compatible",
    name: "Office Ollama",
    base_url: fake.openAiUrl,
    api_key: KEY,
    headers: { "X-Team": "sales-team-secret" },
    ...body
  })

const addModel = (who: Caller, providerId: number, body: Record<string, unknown> = {}) =>
  Effect.map(
    post(who, "/api/user/ai-models", {
      ai_provider_id: providerId,
      model: "llama3.1:8b",
      name: "Llama 3.1 8B",
      input_price: 1,
      output_price: 2,
      context_window: 128000,
      ...body
    }),
    (r) => ok(r, "aiModels.createModel")
  )

/** A pipeline on `modelId` answering at once, one stage, a web channel. */
const agent = (owner: Caller, modelId: number, settings: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", {
        name: `Sales ${Math.random().toString(36).slice(2, 8)}`,
        agent_type_id: 1,
        ai_model_id: modelId,
        language_id: 1
      }),
      "pipelines.create"
    )
    ok(
      yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: 0, ...settings }),
      "pipelines.update"
    )
    yield* createStage(owner, pipeline.id, "Open", 1)
    const channel = yield* linkWebChannel(owner, pipeline.id)
    return { pipeline, channel }
  })

/** The assistant reply of a web-chat contact, once sent. */
const replyTo = (channel: { client_id: string; client_secret: string }, contactId: string) =>
  eventually(
    Effect.flatMap(TestServer, ({ baseUrl }) =>
      fetchJson(`${baseUrl}/api/user/messages/webchat?contact_id=${contactId}&per_page=50`, {
        headers: { authorization: basic(channel), accept: "application/json" }
      })).pipe(
        Effect.map((r) =>
          ok(r, "webChat.history").data.find((m: any) =>
            m.role === "assistant" && m.message
          )
        )
      ),
    20_000
  )

layer(Server, { excludeTestServices: true })("AI providers and models as data", (it) => {
  it.effect("a workspace's provider: key sealed, its models listed to it alone, its replies at its prices", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const other = yield* seedUser()
      yield* giveCredits(owner.workspace_id, { credits: 5 })
      const created = yield* addProvider(owner)
      const provider = ok(created, "aiModels.createProvider")
      expect(provider).toMatchObject({
        kind: "openai_compatible",
        base_url: fake.openAiUrl,
        has_key: true,
        header_names: ["X-Team"],
        workspace_id: owner.workspace_id,
        server_wide: false,
        charge_credits: true
      })
      expect(JSON.stringify(created.body)).not.toContain(KEY)
      expect(JSON.stringify(created.body)).not.toContain("sales-team-secret")
      const stored = yield* sqlRows<{ api_key_ciphertext: string }>`
        select api_key_ciphertext from ai_providers where id = ${provider.id}`
      expect(stored[0]!.api_key_ciphertext).not.toContain(KEY)

      const model = yield* addModel(owner, provider.id)
      expect(model).toMatchObject({ model: "llama3.1:8b", capabilities: ["tools"], workspace_id: owner.workspace_id })
      // the pipeline options list it to its workspace, and not to another
      const options = ok(
        yield* get(owner, `/api/user/pipeline-options?ai_provider_id=${provider.id}`),
        "pipelines.options"
      )
      expect(options.ai_models.map((m: any) => m.id)).toEqual([model.id])
      const theirs = ok(
        yield* get(other, `/api/user/pipeline-options?ai_provider_id=${provider.id}`),
        "pipelines.options"
      )
      expect(theirs.ai_models).toEqual([])
      expect(theirs.ai_providers.map((p: any) => p.id)).not.toContain(provider.id)
      expect((yield* get(other, `/api/user/ai-providers/${provider.id}`)).status).toBe(404)
      expect((yield* get(other, `/api/user/ai-models/${model.id}`)).status).toBe(404)
      expect((yield* put(other, `/api/user/ai-models/${model.id}`, { name: "x" })).status).toBe(404)
      expect((yield* del(other, `/api/user/ai-providers/${provider.id}`)).status).toBe(404)
      const listed = ok(yield* get(other, "/api/user/ai-models"), "aiModels.listModels")
      expect(listed.map((m: any) => m.id)).not.toContain(model.id)
      const refused = yield* post(other, "/api/user/pipelines", {
        name: "Borrowed",
        agent_type_id: 1,
        ai_model_id: model.id,
        language_id: 1
      })
      expect(refused.status).toBe(422)
      expect(envelope(refused).validation).toEqual([{
        field: "ai_model_id",
        message: "The selected AI model does not exist."
      }])

      // a reply through it: the key and header sent, usage priced at the workspace's prices
      fake.script("llama3.1:8b", { text: "Our plan costs 990 euros.", usage: { input: 1000, output: 500 } })
      const { channel, pipeline } = yield* agent(owner, model.id)
      yield* say(channel, "dana", "What does it cost?")
      const reply = yield* replyTo(channel, "dana")
      expect(reply.message).toBe("Our plan costs 990 euros.")
      const sent = fake.requests.find((r) => r.path === "/v1/chat/completions")!
      expect(sent.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(sent.headers["x-team"]).toBe("sales-team-secret")
      const [row] = yield* sqlRows<{ model: string; ai_model_id: string; cost_for_user: string }>`
        select model, ai_model_id, cost_for_user from messages where id = ${reply.id}`
      expect(row).toMatchObject({ model: "llama3.1:8b" })
      expect(Number(row!.ai_model_id)).toBe(model.id)
      expect(Number(row!.cost_for_user)).toBeCloseTo((1000 * 1 + 500 * 2) / 1_000_000, 9)
      const [ws] = yield* sqlRows<{ credits: string }>`select credits from workspaces where id = ${owner.workspace_id}`
      expect(Number(ws!.credits)).toBeCloseTo(5 - 0.002, 9)

      // the operator's own bill: replies through it no longer spend credits, even on an empty balance
      ok(
        yield* put(owner, `/api/user/ai-providers/${provider.id}`, { charge_credits: false }),
        "aiModels.updateProvider"
      )
      yield* giveCredits(owner.workspace_id, { credits: 0 })
      fake.script("llama3.1:8b", { text: "Still here.", usage: { input: 1000, output: 500 } })
      yield* say(channel, "erin", "Hello?")
      expect((yield* replyTo(channel, "erin")).message).toBe("Still here.")
      const [after] = yield* sqlRows<
        { credits: string }
      >`select credits from workspaces where id = ${owner.workspace_id}`
      expect(Number(after!.credits)).toBe(0)

      // in use: neither the model nor its provider is deleted, and the answer names the pipeline
      const inUse = yield* del(owner, `/api/user/ai-models/${model.id}`)
      expect(inUse.status).toBe(409)
      expect(envelope(inUse).message).toContain(`${pipeline.name} (#${pipeline.id})`)
      expect((yield* del(owner, `/api/user/ai-providers/${provider.id}`)).status).toBe(409)
    }))

  it.effect("saving asks the server: an unreachable URL or a refused key is a 422 and nothing is stored", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const before = (yield* sqlRows`select id from ai_providers`).length
      const unreachable = yield* addProvider(owner, { base_url: "http://127.0.0.1:9/v1" })
      expect(unreachable.status).toBe(422)
      expect(envelope(unreachable).validation[0]!.field).toBe("base_url")
      const refused = yield* addProvider(owner, { api_key: "sk-wrong" })
      expect(refused.status).toBe(422)
      expect(envelope(refused).validation[0]).toMatchObject({ field: "api_key" })
      expect(envelope(refused).validation[0]!.message).toContain("401")
      expect(JSON.stringify(refused.body)).not.toContain("sk-wrong")
      expect((yield* sqlRows`select id from ai_providers`).length).toBe(before)
      // skip_check saves a server that is not running yet
      expect((yield* addProvider(owner, { base_url: "http://127.0.0.1:9/v1", skip_check: true })).status).toBe(200)
      // only a super user adds a server-wide provider
      const wide = yield* addProvider(owner, { server_wide: true })
      expect(wide.status).toBe(403)
      // the seeded providers are server-wide: a member cannot change them
      expect((yield* put(owner, "/api/user/ai-providers/2", { api_key: "sk-x" })).status).toBe(403)
      const readOnly = yield* seedUser({ scopes: ["models:read"] })
      expect((yield* addProvider(readOnly)).status).toBe(403)
      expect((yield* get(readOnly, "/api/user/ai-providers")).status).toBe(200)
    }))

  it.effect("the check lists the models, answers with one, and says plainly when a model has no tools", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const provider = ok(yield* addProvider(owner), "aiModels.createProvider")
      const good = ok(
        yield* post(owner, `/api/user/ai-providers/${provider.id}/check`, { model: "llama3.1:8b" }),
        "aiModels.checkProvider"
      )
      expect(good).toMatchObject({ ok: true, reachable: true, model: "llama3.1:8b", tools: true, problem: null })
      expect(good.models).toEqual(expect.arrayContaining(["llama3.1:8b", "gemma:2b"]))
      const noTools = ok(
        yield* post(owner, `/api/user/ai-providers/${provider.id}/check`, { model: "gemma:2b" }),
        "aiModels.checkProvider"
      )
      expect(noTools).toMatchObject({ ok: false, tools: false })
      expect(noTools.problem).toContain("has no tool support")
      const missing = ok(
        yield* post(owner, `/api/user/ai-providers/${provider.id}/check`, { model: "mistral" }),
        "aiModels.checkProvider"
      )
      expect(missing).toMatchObject({ ok: false })
      expect(missing.problem).toContain("does not serve the model \"mistral\"")

      // a model without tools cannot answer a pipeline with actions
      const gemma = yield* addModel(owner, provider.id, { model: "gemma:2b", name: "Gemma", capabilities: [] })
      const llama = yield* addModel(owner, provider.id)
      const { pipeline } = yield* agent(owner, llama.id)
      ok(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/actions`, {
          name: "Notify CRM",
          fixed_trigger: "custom",
          is_active: true,
          description: "Tell the CRM about a qualified lead",
          url: "https://crm.example.com/hook",
          method: "POST"
        }),
        "automation.createAction"
      )
      const refused = yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { ai_model_id: gemma.id })
      expect(refused.status).toBe(422)
      expect(envelope(refused).validation[0]!.field).toBe("ai_model_id")
      expect(envelope(refused).validation[0]!.message).toContain("has no tool support")
      const visionless = yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { vision_model_id: llama.id })
      expect(visionless.status).toBe(422)
      expect(envelope(visionless).validation[0]).toMatchObject({ field: "vision_model_id" })
    }))

  it.effect("a model failing after its retries hands the reply to the fallback model, which the reply records", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const provider = ok(yield* addProvider(owner), "aiModels.createProvider")
      const llama = yield* addModel(owner, provider.id)
      // the local model answers when the provider fails
      const { channel } = yield* agent(owner, llama.id, { fallback_model_id: 1 })
      fake.failNext({ kind: "status", status: 500 }, { times: 3, path: "/chat/completions" })
      yield* say(channel, "fay", "Hello there")
      const reply = yield* replyTo(channel, "fay")
      const [row] = yield* sqlRows<{ model: string }>`select model from messages where id = ${reply.id}`
      expect(row!.model).toBe("parley-local")
      // the failure was logged, without the key or a header's value
      expect(logged.some((line) => line.includes("the fallback model parley-local answers"))).toBe(true)
      for (const line of logged) {
        expect(line).not.toContain(KEY)
        expect(line).not.toContain("sales-team-secret")
      }
    }))

  it.effect("a voice note is transcribed, an image described and a document read before the turn; the model gets them", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const provider = ok(yield* addProvider(owner), "aiModels.createProvider")
      fake.addModel("whisper-1")
      fake.addModel("llava")
      const llama = yield* addModel(owner, provider.id, { model: "llama3.1:8b" })
      const whisper = yield* addModel(owner, provider.id, {
        model: "whisper-1",
        name: "Whisper",
        capabilities: ["transcription"]
      })
      const llava = yield* addModel(owner, provider.id, { model: "llava", name: "LLaVA", capabilities: ["vision"] })
      const { channel } = yield* agent(owner, llama.id, {
        vision_model_id: llava.id,
        transcription_model_id: whisper.id
      })
      fake.transcript("OggS voice note bytes", "I would like the annual plan")
      fake.script("llava", { text: "A red bicycle leaning on a wall", usage: { input: 300, output: 8 } })
      fake.script("llama3.1:8b", { text: "The annual plan is yours.", usage: { input: 10, output: 5 } })
      const form = new FormData()
      form.append("contact_id", "gus")
      form.append("message", "")
      form.append("files[]", new Blob([Buffer.from("OggS voice note bytes")], { type: "audio/ogg" }), "voice.ogg")
      form.append("files[]", new Blob([Buffer.from("\x89PNG fake image")], { type: "image/png" }), "bike.png")
      form.append("files[]", new Blob([Buffer.from("Opening hours: 9 to 5")], { type: "text/plain" }), "hours.txt")
      const { receiverUrl } = yield* TestServer
      const status = yield* Effect.promise(() =>
        fetch(`${receiverUrl}/web-chat/message`, {
          method: "POST",
          headers: { authorization: basic(channel) },
          body: form
        }).then((r) => r.status)
      )
      expect(status).toBe(200)
      expect((yield* replyTo(channel, "gus")).message).toBe("The annual plan is yours.")

      const transcribed = fake.requests.find((r) => r.path === "/v1/audio/transcriptions")!
      expect(transcribed.body).toMatchObject({ model: "whisper-1", file: { name: "voice.ogg", type: "audio/ogg" } })
      const described = fake.requests.find((r) =>
        r.path === "/v1/chat/completions" && (r.body as { model: string }).model === "llava"
      )!
      expect(JSON.stringify(described.body)).toContain("data:image/png;base64,")
      const answered = [...fake.requests].reverse().find((r) =>
        r.path === "/v1/chat/completions" && (r.body as { model: string }).model === "llama3.1:8b"
      )!
      const prompt = JSON.stringify(answered.body)
      expect(prompt).toContain("I would like the annual plan")
      expect(prompt).toContain("A red bicycle leaning on a wall")
      expect(prompt).toContain("Opening hours: 9 to 5")
      // the model without vision was not sent the image itself
      expect(prompt).not.toContain("data:image/png")
      // written once onto the message's files (the console shows them; a repeated turn reads them)
      const [message] = yield* sqlRows<{ files: ReadonlyArray<Record<string, unknown>> }>`
        select m.files from messages m join channels c on c.id = m.channel_id
        where c.client_id = ${channel.client_id} and m.role = 'user'`
      expect(message!.files.map((f) => [f.name, f.transcript, f.description])).toEqual([
        ["voice.ogg", "I would like the annual plan", undefined],
        ["bike.png", undefined, "A red bicycle leaning on a wall"],
        ["hours.txt", undefined, undefined]
      ])
    }))

  it.effect("Gemini: a google provider is checked and answers a pipeline through generateContent", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const wrong = yield* addProvider(owner, {
        kind: "google",
        name: "Gemini",
        base_url: fake.geminiUrl,
        api_key: "x"
      })
      expect(wrong.status).toBe(422)
      expect(envelope(wrong).validation[0]!.field).toBe("api_key")
      const provider = ok(
        yield* addProvider(owner, { kind: "google", name: "Gemini", base_url: fake.geminiUrl, api_key: "gm-key-1" }),
        "aiModels.createProvider"
      )
      const check = ok(yield* post(owner, `/api/user/ai-providers/${provider.id}/check`, {}), "aiModels.checkProvider")
      expect(check).toMatchObject({ ok: true, tools: true })
      expect(check.models).toContain("gemini-2.0-flash")
      const gemini = yield* addModel(owner, provider.id, { model: "gemini-2.0-flash", name: "Gemini Flash" })
      fake.script("gemini-2.0-flash", { text: "Hello from Gemini.", usage: { input: 20, output: 4 } })
      const { channel } = yield* agent(owner, gemini.id)
      yield* say(channel, "hal", "Hi")
      expect((yield* replyTo(channel, "hal")).message).toBe("Hello from Gemini.")
      const sent = [...fake.requests].reverse().find((r) => r.path.endsWith(":generateContent"))!
      expect(sent.headers["x-goog-api-key"]).toBe("gm-key-1")
    }))

  it.effect("at run time: a 429 is waited out and answered; a server that never answers is a provider_error", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const provider = ok(yield* addProvider(owner, { timeout_ms: 1000 }), "aiModels.createProvider")
      const llama = yield* addModel(owner, provider.id)
      const { channel } = yield* agent(owner, llama.id, { handoff_on_failure: false })
      fake.failNext({ kind: "status", status: 429, retryAfter: "1" }, { times: 1, path: "/chat/completions" })
      fake.script("llama3.1:8b", { text: "Sorry for the wait." })
      const sentAt = Date.now()
      yield* say(channel, "ida", "Anyone there?")
      expect((yield* replyTo(channel, "ida")).message).toBe("Sorry for the wait.")
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1000)

      fake.failNext({ kind: "hang" }, { times: 3, path: "/chat/completions" })
      const id = yield* say(channel, "jo", "Hello?")
      const [handled] = yield* eventually(
        Effect.map(
          sqlRows<{ handled_reason: string | null }>`select handled_reason from messages where id = ${id}`,
          (rows) => rows[0]?.handled_reason ? rows : undefined
        ),
        30_000
      )
      expect(handled!.handled_reason).toBe("provider_error")
      const [failed] = yield* sqlRows<{ error: string }>`
        select error from messages where in_reply_to = ${id} and status = 'failed'`
      expect(failed!.error).toMatch(/1000 ms/)
      expect(failed!.error).not.toContain(KEY)
    }))
})
