import { Context, type Effect, Schema, type Stream } from "effect"

/** Whether a run is sent, and in how many attempts at most (1 + the action's `retries`). */
export class ActionPrepared extends Schema.Class<ActionPrepared>("ActionPrepared")({
  send: Schema.Boolean,
  maxAttempts: Schema.Int
}) {}

export class ActionAttemptOutcome extends Schema.Class<ActionAttemptOutcome>("ActionAttemptOutcome")({
  /** a 2xx answer: the run succeeded */
  done: Schema.Boolean,
  /** a timeout, a network failure, a 5xx or a 429 may succeed later; a 4xx or a refused address will not */
  retryable: Schema.Boolean
}) {}

/** Runs written together by one trigger (a stage entry, a message, an AI reply): sent in action order. */
export interface ActionRunGroup {
  readonly groupKey: string
  readonly runIds: ReadonlyArray<number>
}

/**
 * Implemented by the server: the action runs the worker executes. Runs are written by their triggers
 * in the triggering transaction; each step here is idempotent and records what happened.
 */
export interface ActionRunsPort {
  /** Groups with runs not yet handed to the workflow engine, oldest first. */
  readonly undispatched: (limit: number) => Effect.Effect<ReadonlyArray<ActionRunGroup>>
  readonly markDispatched: (runIds: ReadonlyArray<number>) => Effect.Effect<void>
  /** Emits when runs were written (a database notification); may miss some, so consumers also poll. */
  readonly written: Stream.Stream<void>
  /**
   * Applies `max_fires` and required variables, renders the request (stored on the run), or records why it is skipped.
   */
  readonly prepare: (runId: number) => Effect.Effect<ActionPrepared>
  /**
   * One attempt of the stored request, recorded; `nextDelayMs` is when the next attempt is due should this one fail.
   */
  readonly attempt: (runId: number, attempt: number, nextDelayMs: number | null) => Effect.Effect<ActionAttemptOutcome>
  /** Groups whose next attempt is overdue by more than `olderThanMs` (a lost durable wake-up). */
  readonly overdue: (olderThanMs: number) => Effect.Effect<ReadonlyArray<ActionRunGroup>>
}
export class ActionRuns extends Context.Tag("@parley/domain/ActionRuns")<ActionRuns, ActionRunsPort>() {}
