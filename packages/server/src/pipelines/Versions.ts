/**
 * Pipeline versions (docs/versions.md): publish the draft (the configuration tables) as an immutable
 * snapshot that becomes live, roll back by republishing an earlier snapshot, list, read and compare them,
 * and the workspace's `drafts` setting that decides whether the live version is what runs.
 */
import { SqlClient } from "@effect/sql"
import {
  CurrentActor,
  type DiffQuery,
  type PipelineId,
  PipelineNotFound,
  PipelineVersion,
  PipelineVersions,
  PipelineVersionSummary,
  type PublishGate,
  PublishGated,
  type Rollback,
  Unprocessable,
  type UpdateWorkspaceSettings,
  VersionNotFound,
  type VersionRef,
  type WorkspaceId,
  WorkspaceNotFound,
  WorkspaceSettings
} from "@parley/domain"
import { Effect, Option } from "effect"
import { someOrFail } from "../util/Effects.js"
import { diffConfigs } from "./VersionDiff.js"
import { type Config, type LockedPipeline, type VersionRow, VersionsRepo } from "./VersionsRepo.js"

const summary = ({ config_hash: _, id: __, ...row }: VersionRow) => new PipelineVersionSummary(row as never)

export class Versions extends Effect.Service<Versions>()("@parley/server/Versions", {
  dependencies: [VersionsRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* VersionsRepo
    const sql = yield* SqlClient.SqlClient

    const pipelineOf = (id: number) =>
      Effect.flatMap(CurrentActor, (actor) => repo.pipeline(actor.workspaceIds, id)).pipe(
        someOrFail(() => new PipelineNotFound())
      )

    const settings = Effect.fn("Versions.settings")(function*(workspaceId: WorkspaceId) {
      const actor = yield* CurrentActor
      const [row] = yield* repo.settings(actor.workspaceIds, workspaceId)
      if (row === undefined) return yield* new WorkspaceNotFound()
      return new WorkspaceSettings(row)
    })

    const updateSettings = Effect.fn("Versions.updateSettings")(
      function*(workspaceId: WorkspaceId, input: UpdateWorkspaceSettings) {
        yield* settings(workspaceId)
        if (input.drafts !== undefined) yield* repo.setDrafts(workspaceId, input.drafts)
        return yield* settings(workspaceId)
      }
    )

    const list = Effect.fn("Versions.list")(function*(pipelineId: PipelineId) {
      const p = yield* pipelineOf(pipelineId)
      return new PipelineVersions({
        pipeline_id: pipelineId,
        drafts: p.drafts,
        live_version: p.live_number,
        is_publish_gated: p.is_publish_gated,
        draft_changed: p.live_hash !== p.draft_hash,
        versions: (yield* repo.versions(p.id)).map(summary)
      })
    })

    const get = Effect.fn("Versions.get")(function*(pipelineId: PipelineId, number: number) {
      const p = yield* pipelineOf(pipelineId)
      const { config, ...row } = yield* repo.version(p.id, number).pipe(someOrFail(() => new VersionNotFound()))
      return new PipelineVersion({ ...summary(row), config })
    })

    /** A reference's snapshot: `live` is the draft until a first publish. */
    const resolve = (pipelineId: number, live: number | null, ref: VersionRef, field: string) =>
      Effect.gen(function*() {
        const number = ref === "live" ? live : ref === "draft" ? null : ref
        if (number === null) return { name: "draft" as const, config: yield* repo.draft(pipelineId) }
        const found = yield* repo.version(pipelineId, number)
        if (Option.isNone(found)) {
          return yield* Unprocessable.of([{ field, message: "is not a version of this pipeline" }])
        }
        return { name: number, config: found.value.config as Config }
      })

    const diff = Effect.fn("Versions.diff")(function*(pipelineId: PipelineId, query: DiffQuery) {
      const p = yield* pipelineOf(pipelineId)
      const from = yield* resolve(p.id, p.live_number, query.from ?? "live", "from")
      const to = yield* resolve(p.id, p.live_number, query.to ?? "draft", "to")
      return diffConfigs(from.name, to.name, from.config, to.config)
    })

    /** The gate: the newest finished run on the draft passed, and the draft is what it played. */
    const checkGate = (p: LockedPipeline) =>
      Effect.gen(function*() {
        if (!p.is_publish_gated) return
        const run = yield* repo.lastDraftRun(p.id)
        if (Option.isNone(run)) {
          return yield* new PublishGated({
            message:
              "Publishing this pipeline needs a passing eval run of the draft: run evals with version draft first."
          })
        }
        if (run.value.status !== "passed") {
          return yield* new PublishGated({
            message: `The newest eval run of the draft (${run.value.id}) failed: publishing needs a passing run.`
          })
        }
        if (run.value.config_hash !== (yield* repo.draftHash(p.id))) {
          return yield* new PublishGated({
            message: `The draft changed after eval run ${run.value.id} passed: run evals on the draft again.`
          })
        }
      })

    /**
     * One transaction: the pipeline's row locked and read once (the draft and the versions are read after it),
     * `check`, the snapshot stored as the next number and made live.
     */
    const publishFrom = <E>(
      pipelineId: PipelineId,
      fromNumber: number | null,
      check: (p: LockedPipeline) => Effect.Effect<void, E>
    ) =>
      Effect.gen(function*() {
        const actor = yield* CurrentActor
        const { config, ...row } = yield* sql.withTransaction(Effect.gen(function*() {
          const p = yield* repo.lock(actor.workspaceIds, pipelineId).pipe(someOrFail(() => new PipelineNotFound()))
          yield* check(p)
          const stranded = yield* repo.stranded(p.id, p.live_version_id ?? 0, fromNumber)
          if (stranded.length > 0) {
            return yield* Unprocessable.of(stranded.map((s) => ({
              field: "stages",
              message: `The live stage "${s.name}" holds ${s.held} opportunit${
                s.held === 1 ? "y" : "ies"
              } and is not in the version published; move them to another stage first.`
            })))
          }
          return yield* repo.insert({ pipelineId: p.id, fromNumber, userId: actor.userId, tokenId: actor.tokenId })
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return new PipelineVersion({ ...summary(row), config })
      })

    const publish = Effect.fn("Versions.publish")(function*(pipelineId: PipelineId) {
      return yield* publishFrom(pipelineId, null, checkGate)
    })

    const rollback = Effect.fn("Versions.rollback")(function*(pipelineId: PipelineId, input: Rollback) {
      // a rollback is how a bad version is undone: never gated
      return yield* publishFrom(
        pipelineId,
        input.version,
        (p) =>
          Effect.flatMap(repo.version(p.id, input.version), (found) =>
            Option.isSome(found)
              ? Effect.void
              : Unprocessable.of([{ field: "version", message: "is not a version of this pipeline" }]))
      )
    })

    const publishGate = Effect.fn("Versions.publishGate")(function*(pipelineId: PipelineId, input: PublishGate) {
      const p = yield* pipelineOf(pipelineId)
      yield* repo.setGate(p.id, input.is_publish_gated)
      return yield* list(pipelineId)
    })

    return { settings, updateSettings, list, get, diff, publish, rollback, publishGate }
  })
}) {}
