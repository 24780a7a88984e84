import { SqlClient } from "@effect/sql"
import {
  type Actor,
  BadRequest,
  type CreatePipeline,
  type CreateStage,
  CurrentActor,
  ModelPoolTier,
  type Pipeline,
  type PipelineId,
  PipelineModelPool,
  PipelineNotFound,
  PipelineWithStages,
  RoutingTiers,
  type StageId,
  StageNotFound,
  Unprocessable,
  type UpdateModelPool,
  type UpdatePipeline,
  type UpdateStage,
  ValidationIssue,
  type WithWarning,
  type WorkspaceId
} from "@parley/domain"
import { Effect } from "effect"
import { Catalogue } from "../catalogue/Catalogue.js"
import { isUniqueViolation } from "../db/SqlErrors.js"
import { ModelKeys, pipelineModelIds } from "../engine/ModelKeys.js"
import { Knowledge } from "../knowledge/Knowledge.js"
import { someOrFail } from "../util/Effects.js"
import { PipelinesRepo } from "./PipelinesRepo.js"

const nameTaken = Unprocessable.of([{ field: "name", message: "The name has already been taken." }])

const failOnIssues = (issues: ReadonlyArray<ValidationIssue>) =>
  issues.length > 0 ? Effect.fail(Unprocessable.of(issues)) : Effect.void

/** The pool as `GET .../model-pool` shows it: the four tiers in order, null while there is no pool. */
const modelPoolOf = (pipeline: Pipeline) =>
  new PipelineModelPool({
    pipeline_id: pipeline.id,
    is_model_routing_enabled: pipeline.is_model_routing_enabled,
    tiers: RoutingTiers.map((tier) => {
      const entry = pipeline.is_model_routing.find((e) => e.tier === tier)
      return new ModelPoolTier({
        tier,
        ai_model_id: entry?.ai_model_id ?? null,
        instructions: entry?.instructions ?? null
      })
    })
  })

/** Agent configurations and their ordered stages, scoped to the caller's workspaces. */
export class Pipelines extends Effect.Service<Pipelines>()("@parley/server/Pipelines", {
  dependencies: [PipelinesRepo.Default, Catalogue.Default, Knowledge.Default, ModelKeys.Default],
  effect: Effect.gen(function*() {
    const repo = yield* PipelinesRepo
    const modelKeys = yield* ModelKeys
    const catalogue = yield* Catalogue
    const knowledge = yield* Knowledge
    const sql = yield* SqlClient.SqlClient

    const find = (actor: Actor, id: PipelineId) =>
      repo.find(actor.workspaceIds, id).pipe(someOrFail(() => new PipelineNotFound()))

    const withStages = (actor: Actor, id: PipelineId) =>
      Effect.gen(function*() {
        const pipeline = yield* find(actor, id)
        const stages = yield* repo.stages(id)
        return new PipelineWithStages({ ...pipeline, stages })
      })

    /** The saved pipeline, warning when a model it replies with has no provider key in this process. */
    const saved = (pipeline: PipelineWithStages) =>
      Effect.map(
        modelKeys.warningFor(pipelineModelIds({ ...pipeline, pool: pipeline.is_model_routing })),
        (warning): WithWarning<PipelineWithStages> => ({ data: pipeline, warning })
      )

    const channelIssues = (workspaceId: WorkspaceId, channelId: number | null | undefined) =>
      channelId === undefined || channelId === null
        ? Effect.succeed([])
        : Effect.map(
          repo.channelInWorkspace(workspaceId, channelId as never),
          (ok) =>
            ok ? [] : [new ValidationIssue({ field: "channel_id", message: "The selected channel does not exist." })]
        )

    const list = Effect.fn("Pipelines.list")(function*() {
      const actor = yield* CurrentActor
      return yield* repo.list(actor.workspaceIds)
    })

    const get = Effect.fn("Pipelines.get")(function*(id: PipelineId) {
      return yield* withStages(yield* CurrentActor, id)
    })

    const create = Effect.fn("Pipelines.create")(function*(input: CreatePipeline) {
      const actor = yield* CurrentActor
      const workspaceId = input.workspace_id ?? actor.defaultWorkspaceId
      if (!actor.workspaceIds.includes(workspaceId)) {
        return yield* Unprocessable.of([{ field: "workspace_id", message: "The selected workspace is invalid." }])
      }
      yield* failOnIssues([
        ...(yield* catalogue.referenceIssues(
          {
            ...input,
            routing_model_ids: input.is_model_routing?.map((e) => e.ai_model_id)
          },
          undefined,
          { workspaceId }
        )),
        ...(yield* channelIssues(workspaceId, input.channel_id))
      ])
      const id = yield* sql.withTransaction(Effect.gen(function*() {
        const id = yield* repo.insert(workspaceId, input, input.is_model_routing ?? [])
        if (input.channel_id) yield* repo.linkChannel(id, input.channel_id)
        return id
      })).pipe(
        Effect.catchTag(
          "SqlError",
          (e) => isUniqueViolation(e, "pipelines_workspace_name_key") ? Effect.fail(nameTaken) : Effect.die(e)
        )
      )
      return yield* saved(yield* withStages(actor, id).pipe(Effect.catchTag("PipelineNotFound", Effect.die)))
    })

    const update = Effect.fn("Pipelines.update")(function*(id: PipelineId, input: UpdatePipeline) {
      const actor = yield* CurrentActor
      const current = yield* find(actor, id)
      const enablesRouting = input.is_model_routing_enabled === true && input.is_model_routing === undefined &&
        current.is_model_routing.length !== 4
      // a new language must still match the stored dialect when the dialect is not sent with it
      const dialectId = input.dialect_id === undefined && input.language_id !== undefined
        ? current.dialect_id
        : input.dialect_id
      yield* failOnIssues([
        ...(yield* catalogue.referenceIssues(
          { ...input, dialect_id: dialectId, routing_model_ids: input.is_model_routing?.map((e) => e.ai_model_id) },
          current.language_id,
          { workspaceId: current.workspace_id, pipelineId: id }
        )),
        ...(yield* channelIssues(current.workspace_id, input.channel_id)),
        ...(enablesRouting
          ? [
            new ValidationIssue({
              field: "is_model_routing",
              message: "is required when is_model_routing_enabled is true"
            })
          ]
          : [])
      ])
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.update(id, input, input.is_model_routing)
        if (input.channel_id === null) yield* repo.unlinkChannels(id)
        else if (input.channel_id !== undefined) yield* repo.linkChannel(id, input.channel_id)
        // same transaction: a bad table id (422) leaves the pipeline unchanged too
        yield* knowledge.link(
          current.workspace_id,
          id,
          input.attach_knowledge_table_ids ?? [],
          input.detach_knowledge_table_ids ?? []
        )
      })).pipe(
        Effect.catchTag(
          "SqlError",
          (e) => isUniqueViolation(e, "pipelines_workspace_name_key") ? Effect.fail(nameTaken) : Effect.die(e)
        )
      )
      return yield* saved(yield* withStages(actor, id))
    })

    const listStages = Effect.fn("Pipelines.listStages")(function*(id: PipelineId) {
      yield* find(yield* CurrentActor, id)
      return yield* repo.stages(id)
    })

    const parentIssues = (pipelineId: PipelineId, stageId: StageId | undefined, parentId: StageId | null | undefined) =>
      Effect.gen(function*() {
        if (parentId === undefined || parentId === null) return []
        const siblings = yield* repo.stages(pipelineId)
        return siblings.some((s) => s.id === parentId && s.id !== stageId)
          ? []
          : [
            new ValidationIssue({
              field: "parent_id",
              message: "The parent stage must be another stage of the same pipeline."
            })
          ]
      })

    const findStage = (actor: Actor, id: StageId) =>
      repo.findStage(actor.workspaceIds, id).pipe(someOrFail(() => new StageNotFound()))

    const createStage = Effect.fn("Pipelines.createStage")(function*(pipelineId: PipelineId, input: CreateStage) {
      const actor = yield* CurrentActor
      const pipeline = yield* find(actor, pipelineId)
      yield* failOnIssues(yield* parentIssues(pipelineId, undefined, input.parent_id))
      const id = yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.lock(pipelineId)
        const count = yield* repo.stageCount(pipelineId)
        const order = Math.min(input.order, count + 1)
        yield* repo.shiftStages(pipelineId, order, count, 1)
        return yield* repo.insertStage(pipeline.workspace_id, pipelineId, order, input)
      })).pipe(Effect.orDie)
      return yield* findStage(actor, id)
    })

    const updateStage = Effect.fn("Pipelines.updateStage")(function*(id: StageId, input: UpdateStage) {
      const actor = yield* CurrentActor
      const stage = yield* findStage(actor, id)
      const merged = { ...stage, ...input }
      if (merged.is_opening_message && !merged.opening_message_type) {
        return yield* Unprocessable.of([{
          field: "opening_message_type",
          message: "is required when is_opening_message is true"
        }])
      }
      if (
        merged.is_opening_message && merged.opening_message_type === "static" && !merged.static_opening_message?.trim()
      ) {
        return yield* Unprocessable.of([{
          field: "static_opening_message",
          message: "is required when opening_message_type is static"
        }])
      }
      yield* failOnIssues(yield* parentIssues(stage.pipeline_id, id, input.parent_id))
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.lock(stage.pipeline_id)
        let order: number | undefined
        if (input.order !== undefined && input.order !== stage.order) {
          const count = yield* repo.stageCount(stage.pipeline_id)
          order = Math.min(input.order, count)
          if (order < stage.order) yield* repo.shiftStages(stage.pipeline_id, order, stage.order - 1, 1)
          else if (order > stage.order) yield* repo.shiftStages(stage.pipeline_id, stage.order + 1, order, -1)
        }
        yield* repo.updateStage(id, input, order)
      })).pipe(Effect.orDie)
      return yield* findStage(actor, id)
    })

    const deleteStage = Effect.fn("Pipelines.deleteStage")(function*(id: StageId) {
      const actor = yield* CurrentActor
      const stage = yield* findStage(actor, id)
      const held = yield* repo.opportunitiesIn(id)
      if (held > 0) {
        return yield* new BadRequest({
          message: `This stage holds ${held} opportunit${held === 1 ? "y" : "ies"}; move them to another stage first.`
        })
      }
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.lock(stage.pipeline_id)
        const count = yield* repo.stageCount(stage.pipeline_id)
        yield* repo.deleteStage(id)
        yield* repo.shiftStages(stage.pipeline_id, stage.order + 1, count, -1)
      })).pipe(Effect.orDie)
      return { id, deleted: true }
    })

    const modelPool = Effect.fn("Pipelines.modelPool")(function*(id: PipelineId) {
      return modelPoolOf(yield* find(yield* CurrentActor, id))
    })

    /** Replaces the four tiers (stored in tier order) with the checks of create and update pipeline. */
    const updateModelPool = Effect.fn("Pipelines.updateModelPool")(function*(id: PipelineId, input: UpdateModelPool) {
      const actor = yield* CurrentActor
      const current = yield* find(actor, id)
      const issues = yield* catalogue.referenceIssues(
        { routing_model_ids: input.tiers.map((e) => e.ai_model_id) },
        undefined,
        { workspaceId: current.workspace_id }
      )
      yield* failOnIssues(
        issues.map((i) =>
          new ValidationIssue({ field: i.field.replace(/^is_model_routing\./, "tiers."), message: i.message })
        )
      )
      const pool = RoutingTiers.map((tier) => input.tiers.find((e) => e.tier === tier)!)
      yield* repo.update(id, { is_model_routing_enabled: input.is_model_routing_enabled }, pool).pipe(Effect.orDie)
      return modelPoolOf(yield* find(actor, id))
    })

    return { list, get, create, update, listStages, createStage, updateStage, deleteStage, modelPool, updateModelPool }
  })
}) {}
