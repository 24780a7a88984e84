import { type Actor, Language, PipelineOptions, ValidationIssue } from "@parley/domain"
import { Effect, Option } from "effect"
import { CatalogueRepo } from "./CatalogueRepo.js"

export interface ReferenceInput {
  readonly agent_type_id?: number | undefined
  readonly ai_model_id?: number | undefined
  readonly language_id?: number | undefined
  readonly dialect_id?: number | null | undefined
  readonly routing_model_ids?: ReadonlyArray<number> | undefined
  readonly fallback_model_id?: number | null | undefined
  readonly vision_model_id?: number | null | undefined
  readonly transcription_model_id?: number | null | undefined
}

/** The models a pipeline names besides its own, each with what it must be able to do. */
const ROLE_MODELS = [
  { field: "fallback_model_id", needs: null },
  { field: "vision_model_id", needs: "vision" },
  { field: "transcription_model_id", needs: "transcription" }
] as const

/** The model catalogue seeded by migration: what `GET /api/user/pipeline-options` returns. */
export class Catalogue extends Effect.Service<Catalogue>()("@parley/server/Catalogue", {
  dependencies: [CatalogueRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* CatalogueRepo

    const options = Effect.fn("Catalogue.options")(function*(
      actor: Actor,
      query: { readonly language_code: string; readonly ai_provider_id?: number | undefined }
    ) {
      const providers = yield* repo.providers(actor.workspaceIds)
      const models = query.ai_provider_id === undefined
        ? []
        : yield* repo.models(query.ai_provider_id, actor.workspaceIds)
      const agentTypes = yield* repo.agentTypes
      const dialects = yield* repo.dialects
      const languages = yield* repo.languages
      const channels = yield* repo.channels(actor.workspaceIds)
      const selected = languages.find((l) => l.code === query.language_code.toLowerCase())
      return new PipelineOptions({
        ai_providers: providers,
        ai_models: models,
        agent_types: agentTypes,
        languages: languages.map((l) =>
          new Language({ ...l, dialects: dialects.filter((d) => d.language_id === l.id) })
        ),
        dialects: selected ? dialects.filter((d) => d.language_id === selected.id) : [],
        channels
      })
    })

    /**
     * 422 issues for catalogue ids that do not exist (and a dialect of another language). A model must be one the
     * pipeline's workspace may use (server-wide, or its own provider's: another workspace's does not exist for it),
     * able to do what its role needs (a vision model sees images, a transcription model transcribes), and the model
     * that answers must call tools when the pipeline has actions (`pipelineId`: the pipeline being changed).
     */
    const referenceIssues = Effect.fn("Catalogue.referenceIssues")(
      function*(
        input: ReferenceInput,
        currentLanguageId?: number,
        scope: { readonly workspaceId: number | null; readonly pipelineId?: number } = { workspaceId: null }
      ) {
        const issues: Array<ValidationIssue> = []
        const issue = (field: string, message: string) => issues.push(new ValidationIssue({ field, message }))
        if (input.agent_type_id !== undefined && !(yield* repo.exists("agent_types", input.agent_type_id))) {
          issue("agent_type_id", "The selected agent type does not exist.")
        }
        const routing = input.routing_model_ids ?? []
        const named = [
          ...(input.ai_model_id === undefined ? [] : [input.ai_model_id]),
          ...routing,
          ...ROLE_MODELS.flatMap((r) => input[r.field] ?? [])
        ]
        const usable = new Map((yield* repo.usableModels([...new Set(named)], scope.workspaceId)).map((m) => [m.id, m]))
        if (input.ai_model_id !== undefined) {
          const model = usable.get(input.ai_model_id)
          if (model === undefined) issue("ai_model_id", "The selected AI model does not exist.")
          else if (!model.capabilities.includes("tools") && scope.pipelineId !== undefined) {
            const actions = yield* repo.pipelineActions(scope.pipelineId)
            if (actions > 0) {
              issue(
                "ai_model_id",
                `The model ${model.model} has no tool support, and this pipeline has ${actions} action${
                  actions === 1 ? "" : "s"
                } the agent calls as tools: choose a model with the tools capability.`
              )
            }
          }
        }
        for (const role of ROLE_MODELS) {
          const id = input[role.field]
          if (id === undefined || id === null) continue
          const model = usable.get(id)
          if (model === undefined) issue(role.field, "The selected AI model does not exist.")
          else if (role.needs !== null && !model.capabilities.includes(role.needs)) {
            issue(role.field, `The model ${model.model} does not have the ${role.needs} capability.`)
          }
        }
        if (input.language_id !== undefined && !(yield* repo.exists("languages", input.language_id))) {
          issue("language_id", "The selected language does not exist.")
        }
        if (input.dialect_id !== undefined && input.dialect_id !== null) {
          const languageId = input.language_id ?? currentLanguageId
          const dialectLanguage = yield* repo.dialectLanguage(input.dialect_id)
          if (Option.isNone(dialectLanguage)) {
            issue("dialect_id", "The selected dialect does not exist.")
          } else if (languageId !== undefined && dialectLanguage.value !== languageId) {
            issue("dialect_id", "The selected dialect belongs to another language.")
          }
        }
        routing.forEach((id, i) => {
          if (!usable.has(id)) issue(`is_model_routing.${i}.ai_model_id`, "The selected AI model does not exist.")
        })
        return issues
      }
    )

    return { options, referenceIssues }
  })
}) {}
