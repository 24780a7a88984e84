import { SqlClient } from "@effect/sql"
import {
  AgentType,
  AiModel,
  AiProvider,
  ConnectedChannel,
  type Actor,
  Dialect,
  Language,
  PipelineOptions,
  ValidationIssue
} from "@parley/domain"
import { Effect, Schema } from "effect"

const decode = <A, I>(schema: Schema.Schema<A, I>) => (rows: ReadonlyArray<unknown>) =>
  Schema.decodeUnknown(Schema.Array(schema))(rows).pipe(Effect.orDie)

export interface ReferenceInput {
  readonly agent_type_id?: number | undefined
  readonly ai_model_id?: number | undefined
  readonly language_id?: number | undefined
  readonly dialect_id?: number | null | undefined
  readonly routing_model_ids?: ReadonlyArray<number> | undefined
}

/** The model catalogue seeded by migration: what `GET /api/user/pipeline-options` returns. */
export class Catalogue extends Effect.Service<Catalogue>()("@parley/server/Catalogue", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const options = Effect.fn("Catalogue.options")(function*(
      actor: Actor,
      query: { readonly language_code: string; readonly ai_provider_id?: number | undefined }
    ) {
      const providers = yield* sql`select id, slug, name from ai_providers order by id`.pipe(Effect.flatMap(decode(AiProvider)))
      const models = query.ai_provider_id === undefined
        ? []
        : yield* sql`
            select id, ai_provider_id, name, model, input_price_per_million, output_price_per_million, context_window
            from ai_models where ai_provider_id = ${query.ai_provider_id} order by id`.pipe(Effect.flatMap(decode(AiModel)))
      const agentTypes = yield* sql`select id, name, description from agent_types order by id`.pipe(Effect.flatMap(decode(AgentType)))
      const dialects = yield* sql`select id, language_id, code, name from dialects order by id`.pipe(Effect.flatMap(decode(Dialect)))
      const languages = yield* sql<{ id: number; code: string; name: string }>`select id, code, name from languages order by id`
      const channels = yield* sql`
        select id, kind, name, pipeline_id, is_active from channels
        where workspace_id in ${sql.in(actor.workspaceIds)} order by id`.pipe(Effect.flatMap(decode(ConnectedChannel)))
      const selected = languages.find((l) => l.code === query.language_code.toLowerCase())
      return new PipelineOptions({
        ai_providers: providers,
        ai_models: models,
        agent_types: agentTypes,
        languages: languages.map((l) =>
          new Language({ ...l, id: l.id as Language["id"], dialects: dialects.filter((d) => d.language_id === l.id) })
        ),
        dialects: selected ? dialects.filter((d) => d.language_id === selected.id) : [],
        channels
      })
    }, Effect.orDie)

    /** 422 issues for catalogue ids that do not exist (and a dialect of another language). */
    const referenceIssues = Effect.fn("Catalogue.referenceIssues")(function*(input: ReferenceInput, currentLanguageId?: number) {
      const issues: Array<ValidationIssue> = []
      const exists = (table: "agent_types" | "ai_models" | "languages", id: number) =>
        sql`select 1 from ${sql(table)} where id = ${id}`.pipe(Effect.map((r) => r.length > 0))
      if (input.agent_type_id !== undefined && !(yield* exists("agent_types", input.agent_type_id))) {
        issues.push(new ValidationIssue({ field: "agent_type_id", message: "The selected agent type does not exist." }))
      }
      if (input.ai_model_id !== undefined && !(yield* exists("ai_models", input.ai_model_id))) {
        issues.push(new ValidationIssue({ field: "ai_model_id", message: "The selected AI model does not exist." }))
      }
      if (input.language_id !== undefined && !(yield* exists("languages", input.language_id))) {
        issues.push(new ValidationIssue({ field: "language_id", message: "The selected language does not exist." }))
      }
      if (input.dialect_id !== undefined && input.dialect_id !== null) {
        const languageId = input.language_id ?? currentLanguageId
        const rows = yield* sql<{ language_id: number }>`select language_id from dialects where id = ${input.dialect_id}`
        if (rows.length === 0) {
          issues.push(new ValidationIssue({ field: "dialect_id", message: "The selected dialect does not exist." }))
        } else if (languageId !== undefined && rows[0]!.language_id !== languageId) {
          issues.push(new ValidationIssue({ field: "dialect_id", message: "The selected dialect belongs to another language." }))
        }
      }
      const routing = input.routing_model_ids ?? []
      if (routing.length > 0) {
        const found = new Set(
          (yield* sql<{ id: number }>`select id from ai_models where id in ${sql.in(routing)}`).map((r) => r.id)
        )
        routing.forEach((id, i) => {
          if (!found.has(id)) {
            issues.push(new ValidationIssue({ field: `is_model_routing.${i}.ai_model_id`, message: "The selected AI model does not exist." }))
          }
        })
      }
      return issues
    }, Effect.orDie)

    return { options, referenceIssues }
  })
}) {}
