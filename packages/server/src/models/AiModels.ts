/**
 * The models a pipeline may name (docs/agent.md, "Models and providers"): each belongs to a provider and so to its
 * workspace (or to every workspace with a server-wide provider). Whoever may change the provider may change its
 * models; one in use by a pipeline is not deleted (409 naming the pipelines).
 */
import {
  type AiModelId,
  AiModelNotFound,
  AiModelRecord,
  type CreateAiModel,
  CurrentActor,
  ModelInUse,
  Unprocessable,
  type UpdateAiModel
} from "@parley/domain"
import { Effect, Option } from "effect"
import { AiProviders, usersOf } from "./AiProviders.js"
import { ModelsRepo } from "./ModelsRepo.js"

/** What a new model can do unless told otherwise: call tools, as the chat models of every provider listed do. */
const DEFAULT_CAPABILITIES = ["tools"] as const
const DEFAULT_CONTEXT_WINDOW = 8192

export class AiModels extends Effect.Service<AiModels>()("@parley/server/AiModels", {
  dependencies: [ModelsRepo.Default, AiProviders.Default],
  effect: Effect.gen(function*() {
    const repo = yield* ModelsRepo
    const providers = yield* AiProviders

    const find = Effect.fn("AiModels.find")(function*(id: AiModelId) {
      const actor = yield* CurrentActor
      const row = yield* repo.find({ id, workspaceIds: actor.workspaceIds }).pipe(Effect.orDie)
      return yield* Option.match(row, { onNone: () => Effect.fail(new AiModelNotFound()), onSome: Effect.succeed })
    })

    const list = Effect.fn("AiModels.list")(function*(query: { readonly ai_provider_id?: number | undefined }) {
      const actor = yield* CurrentActor
      const rows = yield* repo.list({ workspaceIds: actor.workspaceIds, providerId: query.ai_provider_id ?? null })
        .pipe(Effect.orDie)
      return rows.map((r) => new AiModelRecord(r))
    })

    const get = Effect.fn("AiModels.get")(function*(id: AiModelId) {
      return new AiModelRecord(yield* find(id))
    })

    const uniqueName = Effect.fn("AiModels.uniqueName")(
      function*(providerId: number, model: string, except: number | null) {
        const taken = yield* repo.nameTaken({ providerId, model, except }).pipe(Effect.orDie)
        if (Option.isSome(taken)) {
          return yield* Unprocessable.of([{ field: "model", message: "is already a model of this provider." }])
        }
      }
    )

    const create = Effect.fn("AiModels.create")(function*(input: CreateAiModel) {
      const provider = yield* providers.find(input.ai_provider_id).pipe(
        Effect.catchTag(
          "AiProviderNotFound",
          () => Unprocessable.of([{ field: "ai_provider_id", message: "The selected AI provider does not exist." }])
        )
      )
      yield* providers.mayChange(provider)
      yield* uniqueName(provider.id, input.model, null)
      const { id } = yield* repo.insert({
        ai_provider_id: provider.id,
        name: input.name ?? input.model,
        model: input.model,
        input_price: input.input_price ?? 0,
        output_price: input.output_price ?? 0,
        context_window: input.context_window ?? DEFAULT_CONTEXT_WINDOW,
        capabilities: [...new Set(input.capabilities ?? DEFAULT_CAPABILITIES)]
      }).pipe(Effect.orDie)
      return yield* get(id).pipe(Effect.orDie)
    })

    const update = Effect.fn("AiModels.update")(function*(id: AiModelId, input: UpdateAiModel) {
      const row = yield* find(id)
      yield* providers.mayChange(yield* providers.find(row.ai_provider_id).pipe(Effect.orDie))
      if (input.model !== undefined) yield* uniqueName(row.ai_provider_id, input.model, id)
      yield* repo.update(id, {
        ...input,
        capabilities: input.capabilities === undefined ? undefined : [...new Set(input.capabilities)]
      }).pipe(Effect.orDie)
      return yield* get(id)
    })

    const remove = Effect.fn("AiModels.remove")(function*(id: AiModelId) {
      const row = yield* find(id)
      yield* providers.mayChange(yield* providers.find(row.ai_provider_id).pipe(Effect.orDie))
      const users = usersOf(
        yield* repo.pipelinesUsingModel(id).pipe(Effect.orDie),
        yield* repo.tablesUsingModel(id).pipe(Effect.orDie)
      )
      if (users !== null) {
        return yield* new ModelInUse({ message: `The model is used by ${users}. Choose another model for them first.` })
      }
      yield* repo.remove(id).pipe(Effect.orDie)
      return { id, deleted: true }
    })

    return { list, get, create, update, remove }
  })
}) {}
