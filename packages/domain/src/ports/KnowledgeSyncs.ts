import { Context, type Effect, Schema } from "effect"

/** One step of a knowledge source's sync: `done` when no page is left to read (or the run is no longer current). */
export class SourceStep extends Schema.Class<SourceStep>("SourceStep")({ done: Schema.Boolean }) {}

/**
 * Implemented by the server: the steps of a knowledge source's sync (issue 41), which the SyncKnowledgeSource
 * workflow runs as activities. Each step reads the next few pages of the run's frontier (or the source's file) and
 * records each page's outcome as it goes, so a step repeated after a crash reads only what was not yet recorded. A
 * step or a finish of a run that is no longer the source's (deleted, or taken over by a newer run) does nothing.
 */
export interface KnowledgeSyncsPort {
  readonly step: (sourceId: number, run: number) => Effect.Effect<SourceStep>
  /** Deletes the points the run no longer produced and ends it `ready` (or `failed`, when nothing could be read). */
  readonly finish: (sourceId: number, run: number) => Effect.Effect<void>
}
export class KnowledgeSyncs
  extends Context.Tag("@parley/domain/KnowledgeSyncs")<KnowledgeSyncs, KnowledgeSyncsPort>()
{}
