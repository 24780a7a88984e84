/**
 * A turn's context (what the agent is told) from the snapshot TurnsRepo reads in one statement, with
 * the knowledge retrieved for the contact's latest messages.
 */
import {
  citationOf,
  type ModelRef,
  placeholders,
  templatedStrings,
  type TurnAction,
  type TurnContext,
  type TurnHandoff,
  type TurnStage,
  withoutSources
} from "@parley/domain"
import { Effect, Option } from "effect"
import type { Knowledge } from "../knowledge/Knowledge.js"
import type { TurnMedia } from "./TurnMedia.js"
import type { ModelRow, PipelineConfig, TurnSnapshot } from "./TurnRows.js"

export const toModel = (r: ModelRow): ModelRef => ({
  id: r.id,
  provider: r.provider,
  kind: r.kind,
  providerId: r.provider_id,
  providerRevision: r.revision,
  model: r.model,
  inputPricePerMillion: r.input_price,
  outputPricePerMillion: r.output_price,
  contextWindow: r.context_window,
  capabilities: r.capabilities,
  chargeCredits: r.charge_credits,
  hasKey: r.has_key
})

/** The turn context from a snapshot (TurnsRepo), or none when there is no agent to answer. */
/** `withKnowledge` false: no retrieval (a bridge message or a summary answers no question). */
export const makeContextFrom = (
  knowledge: Pick<Knowledge, "retrieve">,
  turnHandoff: (c: TurnSnapshot, p: PipelineConfig, upTo: string | null) => TurnHandoff,
  media: Pick<TurnMedia, "messages">
) =>
(snap: TurnSnapshot, upTo: string | null, withKnowledge = true) =>
  Effect.gen(function*() {
    const pl = snap.pipeline
    if (pl === null) return Option.none<{ context: TurnContext; pipeline: PipelineConfig }>()
    const pool = pl.is_model_routing_enabled && pl.model_pool.length === 4 ? pl.model_pool : null
    const catalogue = new Map(pl.models.map((m) => [Number(m.id), toModel(m)]))
    const stages = pl.stages.map((s): TurnStage => ({
      id: Number(s.id),
      name: s.name,
      nature: s.nature,
      persona: s.ai_persona,
      instructions: s.instructions,
      enterCondition: s.enter_condition
    }))
    const model = catalogue.get(Number(pl.ai_model_id))!
    const modelOf = (id: number | null) => id === null ? null : catalogue.get(Number(id)) ?? null
    const { messages: remembered, usage: mediaUsage } = yield* media.messages(snap.history, {
      answering: [model, ...(pool ?? []).flatMap((t) => catalogue.get(Number(t.ai_model_id)) ?? [])],
      vision: modelOf(pl.vision_model_id),
      transcription: modelOf(pl.transcription_model_id)
    })
    // a reply's sources' lines (cite_sources) are for the contact: the model would copy them into the next reply
    const memory = remembered.map((m) => m.role === "assistant" ? { ...m, text: withoutSources(m.text) } : m)
    const lastAssistant = memory.map((m) => m.role).lastIndexOf("assistant")
    // a voice note's transcript and a described image are the contact's words for the knowledge search too
    const asked = memory.slice(lastAssistant + 1).filter((m) => m.role === "user").flatMap((m) => [
      m.text,
      ...(m.files ?? []).flatMap((f) => [f.transcript ?? "", f.description ?? ""])
    ]).filter((t) => t !== "").join("\n")
    const hits = !withKnowledge || pl.rag_mode === "none" || asked.trim() === ""
      ? []
      : yield* knowledge.retrieve(pl.knowledge_table_ids, asked, pl.rag_mode, pl.no_of_relevant_points)
    const context: TurnContext = {
      conversationId: String(snap.id),
      workspaceId: snap.workspace_id,
      pipelineId: pl.id,
      pipelineName: pl.name,
      opportunityId: snap.opportunity_pipeline_id === pl.id ? snap.opportunity_id : null,
      agentType: { name: pl.agent_type_name, description: pl.agent_type_description },
      persona: pl.persona,
      instructions: pl.instructions,
      language: pl.language,
      dialect: pl.dialect,
      temperature: pl.model_temperature,
      stage: stages.find((s) => s.id === snap.opportunity_stage_id) ?? null,
      stages,
      contact: {
        name: snap.contact_name,
        email: snap.contact_email,
        phone: snap.contact_phone,
        identifier: snap.contact_identifier
      },
      context: snap.opportunity_context ?? {},
      history: memory,
      knowledge: hits.map((h) => ({
        pointId: h.id,
        source: h.table_name,
        text: h.text,
        citation: citationOf(h.knowledge_table_id, h.default_id, h.data)
      })),
      citeSources: pl.cite_sources,
      model,
      fallbackModel: modelOf(pl.fallback_model_id),
      ...(mediaUsage.cost > 0 || mediaUsage.outputTokens > 0 ? { mediaUsage } : {}),
      actions: pl.actions.map((a): TurnAction => {
        const used = new Set(templatedStrings(a).flatMap((t) => placeholders(t.text)))
        return {
          id: Number(a.id),
          name: a.name,
          trigger: a.fixed_trigger,
          description: a.description,
          instructions: a.instructions,
          aiVariables: pl.ai_variables.filter((v) => used.has(v.name)).map((v) => ({
            name: v.name,
            instruction: v.value
          }))
        }
      }),
      routing: pool === null
        ? null
        : pool.map((t) => ({
          tier: t.tier,
          model: catalogue.get(Number(t.ai_model_id))!,
          instructions: t.instructions ?? null
        })),
      contextMessageCount: pl.context_message_count,
      isEval: snap.is_eval,
      operatorNote: snap.handoff_return_note,
      configVersion: snap.config_version,
      handoff: turnHandoff(snap, pl, upTo)
    }
    return Option.some({ context, pipeline: pl })
  })

/** A conversation's snapshot with its turn context (`ready`: none without an agent to answer). */
export interface SnapshotWithContext {
  readonly snap: TurnSnapshot
  readonly ready: Option.Option<{ context: TurnContext; pipeline: PipelineConfig }>
}

export type SnapshotContext = (
  conversationId: string,
  upTo: string | null,
  withKnowledge?: boolean
) => Effect.Effect<Option.Option<SnapshotWithContext>>

/** The snapshot of a conversation (TurnsRepo.snapshot) and its turn context, for a turn up to `upTo`. */
export const makeSnapshotContext = (
  snapshot: (conversationId: string, upTo: string | null) => Effect.Effect<Option.Option<TurnSnapshot>>,
  contextFrom: ReturnType<typeof makeContextFrom>
): SnapshotContext =>
(conversationId, upTo, withKnowledge = true) =>
  Effect.flatMap(snapshot(conversationId, upTo), (snap) =>
    Option.isNone(snap)
      ? Effect.succeed(Option.none())
      : Effect.map(contextFrom(snap.value, upTo, withKnowledge), (ready) => Option.some({ snap: snap.value, ready })))
