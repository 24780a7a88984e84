/**
 * Model providers as the operator manages them (docs/agent.md, "Models and providers"). A workspace's own provider is
 * its members' (scope `models:write`); a server-wide one, and the seeded OpenAI and Anthropic rows, a super user's.
 * The key and header values are sealed on the way in and never come back out. Saving asks the server whether the URL
 * answers and the key is accepted (unless `skip_check`), so a typo is a 422 now rather than silent replies later.
 */
import { SqlClient } from "@effect/sql"
import {
  type AiProviderId,
  AiProviderNotFound,
  AiProviderRecord,
  type CreateAiProvider,
  CurrentActor,
  Forbidden,
  ModelInUse,
  Unprocessable,
  type UpdateAiProvider
} from "@parley/domain"
import { Effect, Option } from "effect"
import { AppSecret } from "../config/AppSecret.js"
import { ModelsRepo } from "./ModelsRepo.js"
import { ProviderEndpoints } from "./ProviderEndpoints.js"
import { ProviderProbe } from "./ProviderProbe.js"
import { type ProviderRow, type ProviderSecretsRow, ProvidersRepo } from "./ProvidersRepo.js"

type Named = ReadonlyArray<{ readonly id: number; readonly name: string }>

/** `pipelines: Sales (#4), Support (#9); knowledge tables: FAQ (#2)`: what a 409 names; null when nothing uses it. */
export const usersOf = (pipelines: Named, tables: Named) => {
  const list = (rows: Named) => rows.map((r) => `${r.name} (#${r.id})`).join(", ")
  const parts = [
    ...(pipelines.length > 0 ? [`pipelines: ${list(pipelines)}`] : []),
    ...(tables.length > 0 ? [`knowledge tables: ${list(tables)}`] : [])
  ]
  return parts.length === 0 ? null : parts.join("; ")
}

export class AiProviders extends Effect.Service<AiProviders>()("@parley/server/AiProviders", {
  dependencies: [
    ProvidersRepo.Default,
    ModelsRepo.Default,
    ProviderEndpoints.Default,
    AppSecret.Default,
    ProviderProbe.Default
  ],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* ProvidersRepo
    const models = yield* ModelsRepo
    const endpoints = yield* ProviderEndpoints
    const secrets = yield* AppSecret
    const probe = yield* ProviderProbe

    const toRecord = (row: ProviderRow) =>
      new AiProviderRecord({
        ...row,
        header_names: Object.keys(endpoints.headersOf(row.headers_ciphertext)),
        server_wide: row.workspace_id === null
      })

    const find = Effect.fn("AiProviders.find")(function*(id: AiProviderId) {
      const actor = yield* CurrentActor
      const row = yield* repo.find({ id, workspaceIds: actor.workspaceIds }).pipe(Effect.orDie)
      return yield* Option.match(row, { onNone: () => Effect.fail(new AiProviderNotFound()), onSome: Effect.succeed })
    })

    /** Who may change a provider: its workspace's members; a super user for server-wide and seeded ones. */
    const mayChange = Effect.fn("AiProviders.mayChange")(function*(row: ProviderRow) {
      const actor = yield* CurrentActor
      if (row.kind === "local") {
        return yield* Unprocessable.of([{ field: "id", message: "The local model's provider cannot be changed." }])
      }
      if (row.workspace_id === null && actor.isSuperUser !== true) {
        return yield* new Forbidden({ message: "Only a super user may change a server-wide provider." })
      }
    })

    /**
     * Asks the server (its models list) before anything is saved, with what would be saved: an address that does not
     * answer or a refused key is a 422, and nothing is written.
     */
    const checkReachable = Effect.fn("AiProviders.checkReachable")(function*(candidate: ProviderSecretsRow) {
      const result = yield* probe.listModels(endpoints.fromRow(candidate))
      if (result.reason === "unreachable" || result.reason === "timeout") {
        return yield* Unprocessable.of([{ field: "base_url", message: result.problem ?? "could not be reached." }])
      }
      if (result.reason === "unauthorized") {
        return yield* Unprocessable.of([{ field: "api_key", message: result.problem ?? "was refused." }])
      }
    })

    const sealHeaders = (headers: Readonly<Record<string, string>> | undefined) =>
      headers === undefined
        ? undefined
        : Object.keys(headers).length === 0
        ? null
        : secrets.encrypt(JSON.stringify(headers))
    const sealKey = (key: string | null | undefined) =>
      key === undefined ? undefined : key === null || key.trim() === "" ? null : secrets.encrypt(key.trim())

    const list = Effect.fn("AiProviders.list")(function*() {
      const actor = yield* CurrentActor
      return (yield* repo.list(actor.workspaceIds).pipe(Effect.orDie)).map(toRecord)
    })

    const get = Effect.fn("AiProviders.get")(function*(id: AiProviderId) {
      return toRecord(yield* find(id))
    })

    const create = Effect.fn("AiProviders.create")(function*(input: CreateAiProvider) {
      const actor = yield* CurrentActor
      const serverWide = input.server_wide === true
      if (serverWide && actor.isSuperUser !== true) {
        return yield* new Forbidden({ message: "Only a super user may add a server-wide provider." })
      }
      const workspaceId = serverWide ? null : input.workspace_id ?? actor.defaultWorkspaceId
      if (workspaceId !== null && !actor.workspaceIds.includes(workspaceId)) {
        return yield* Unprocessable.of([{ field: "workspace_id", message: "The selected workspace is invalid." }])
      }
      if (input.kind === "openai_compatible" && (input.base_url === undefined || input.base_url === null)) {
        return yield* Unprocessable.of([{
          field: "base_url",
          message: "is required for an OpenAI-compatible server (for Ollama: http://127.0.0.1:11434/v1)."
        }])
      }
      if (input.kind !== "openai_compatible" && (input.api_key === undefined || input.api_key === null)) {
        return yield* Unprocessable.of([{ field: "api_key", message: `is required for the ${input.kind} provider.` }])
      }
      const sealed = {
        kind: input.kind,
        name: input.name,
        base_url: input.base_url ?? null,
        api_key_ciphertext: sealKey(input.api_key) ?? null,
        headers_ciphertext: sealHeaders(input.headers) ?? null,
        timeout_ms: input.timeout_ms ?? null
      }
      if (input.skip_check !== true) {
        yield* checkReachable({ ...sealed, id: 0 as AiProviderId, slug: input.kind, updated_at: "" })
      }
      const { id } = yield* repo.insert({
        ...sealed,
        workspace_id: workspaceId,
        charge_credits: input.charge_credits ?? true
      })
        .pipe(Effect.orDie)
      return yield* get(id).pipe(Effect.orDie)
    })

    const update = Effect.fn("AiProviders.update")(function*(id: AiProviderId, input: UpdateAiProvider) {
      const row = yield* find(id)
      yield* mayChange(row)
      if (row.kind === "openai_compatible" && input.base_url === null) {
        return yield* Unprocessable.of([{ field: "base_url", message: "is required for an OpenAI-compatible server." }])
      }
      const write = {
        name: input.name,
        base_url: input.base_url,
        api_key_ciphertext: sealKey(input.api_key),
        headers_ciphertext: sealHeaders(input.headers),
        timeout_ms: input.timeout_ms,
        charge_credits: row.workspace_id === null ? undefined : input.charge_credits
      }
      const reaches = input.base_url !== undefined || input.api_key !== undefined || input.headers !== undefined
      if (reaches && input.skip_check !== true) {
        const current = yield* repo.secrets(id).pipe(
          Effect.orDie,
          Effect.flatMap(Effect.orElseFail(() => new AiProviderNotFound()))
        )
        yield* checkReachable({
          ...current,
          base_url: write.base_url === undefined ? current.base_url : write.base_url,
          api_key_ciphertext: write.api_key_ciphertext === undefined
            ? current.api_key_ciphertext
            : write.api_key_ciphertext,
          headers_ciphertext: write.headers_ciphertext === undefined
            ? current.headers_ciphertext
            : write.headers_ciphertext,
          timeout_ms: write.timeout_ms === undefined ? current.timeout_ms : write.timeout_ms
        })
      }
      yield* repo.update(id, write).pipe(Effect.orDie)
      return yield* get(id)
    })

    const remove = Effect.fn("AiProviders.remove")(function*(id: AiProviderId) {
      const row = yield* find(id)
      yield* mayChange(row)
      if (row.is_seeded) {
        return yield* Unprocessable.of([{
          field: "id",
          message: "A seeded provider cannot be deleted; remove its key."
        }])
      }
      const users = usersOf(
        yield* repo.pipelinesUsingProvider(id).pipe(Effect.orDie),
        yield* repo.tablesUsingProvider(id).pipe(Effect.orDie)
      )
      if (users !== null) {
        return yield* new ModelInUse({
          message: `The provider's models are used by ${users}. Choose other models first.`
        })
      }
      yield* sql.withTransaction(Effect.zipRight(models.removeOfProvider(id), repo.remove(id))).pipe(Effect.orDie)
      return { id, deleted: true }
    })

    return { list, get, find, mayChange, create, update, remove }
  })
}) {}
