/**
 * The failures of the commands that call a running server's REST API (`eval run`, `providers`, `models`): a command
 * line it cannot read (exit code 2, with the usage when given) and a refusal or an unreachable server (exit code 1),
 * each as `{"error": ...}` under `--json`.
 */
import { Console, Effect, Schema } from "effect"

export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}
export class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", { message: Schema.String }) {}

const report = (json: boolean, message: string, text: string, exitCode: number) =>
  Effect.zipRight(
    json ? Console.log(JSON.stringify({ error: message })) : Console.error(text),
    Effect.sync(() => (process.exitCode = exitCode))
  )

/** Prints a command's failure as the command line's conventions say and sets the exit code. */
export const reportFailures =
  (json: boolean, usage?: string) => <A, E, R>(effect: Effect.Effect<A, E | UsageError | RunFailed, R>) =>
    effect.pipe(
      Effect.catchIf(
        (e): e is UsageError => e instanceof UsageError,
        (e) => report(json, e.message, usage === undefined ? e.message : `${e.message}\n\n${usage}`, 2)
      ),
      Effect.catchIf(
        (e): e is RunFailed => e instanceof RunFailed,
        (e) => report(json, e.message, `Error: ${e.message}`, 1)
      )
    )
