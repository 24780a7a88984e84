import { type Actor, Language, PipelineOptions, ValidationIssue } from "@parley/domain"
import { Effect, Option } from "effect"
import { CatalogueRepo } from "./CatalogueRepo.js"

export interface ReferenceInput {
  readonly agent_type_id?: number | undefined
  readonly ai_model_id?: number | undefined
  readonly language_id?: number | undefined
  readonly dialect_id?: number | null | undefined
  readonly routing_model_ids?: ReadonlyArray<number> | undefined
}

/** The model catalogue seeded by migration: what `GET /api/user/pipeline-options` returns. */
export class Catalogue extends Effect.Service<Catalogue>()("@parley/server/Catalogue", {
  dependencies: [CatalogueRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* CatalogueRepo

    const options = Effect.fn("Catalogue.options")(function*(
      actor: Actor,
      query: { readonly language_code: string; readonly ai_provider_id?: number | undefined }
    ) {
      const providers = yield* repo.providers
      const models = query.ai_provider_id === undefined ? [] : yield* repo.models(query.ai_provider_id)
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

    /** 422 issues for catalogue ids that do not exist (and a dialect of another language). */
    const referenceIssues = Effect.fn("Catalogue.referenceIssues")(
      function*(input: ReferenceInput, currentLanguageId?: number) {
        const issues: Array<ValidationIssue> = []
        if (input.agent_type_id !== undefined && !(yield* repo.exists("agent_types", input.agent_type_id))) {
          issues.push(
            new ValidationIssue({ field: "agent_type_id", message: "The selected agent type does not exist." })
          )
        }
        if (input.ai_model_id !== undefined && !(yield* repo.exists("ai_models", input.ai_model_id))) {
          issues.push(new ValidationIssue({ field: "ai_model_id", message: "The selected AI model does not exist." }))
        }
        if (input.language_id !== undefined && !(yield* repo.exists("languages", input.language_id))) {
          issues.push(new ValidationIssue({ field: "language_id", message: "The selected language does not exist." }))
        }
        if (input.dialect_id !== undefined && input.dialect_id !== null) {
          const languageId = input.language_id ?? currentLanguageId
          const dialectLanguage = yield* repo.dialectLanguage(input.dialect_id)
          if (Option.isNone(dialectLanguage)) {
            issues.push(new ValidationIssue({ field: "dialect_id", message: "The selected dialect does not exist." }))
          } else if (languageId !== undefined && dialectLanguage.value !== languageId) {
            issues.push(
              new ValidationIssue({ field: "dialect_id", message: "The selected dialect belongs to another language." })
            )
          }
        }
        const routing = input.routing_model_ids ?? []
        if (routing.length > 0) {
          const found = new Set(yield* repo.existingModels(routing))
          routing.forEach((id, i) => {
            if (!found.has(id)) {
              issues.push(
                new ValidationIssue({
                  field: `is_model_routing.${i}.ai_model_id`,
                  message: "The selected AI model does not exist."
                })
              )
            }
          })
        }
        return issues
      }
    )

    return { options, referenceIssues }
  })
}) {}
