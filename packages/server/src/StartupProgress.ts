/**
 * What a starting process says it is doing (opening the database, migrating, starting the engine,
 * seeding the demo), each line with the seconds since the process started, so a slow start shows where
 * its time goes. Silent unless `parley serve` provides the printer (tests and the CLI say nothing).
 */
import { Console, Context, Effect, Layer } from "effect"

export class StartupProgress extends Context.Reference<StartupProgress>()("@parley/server/StartupProgress", {
  defaultValue: () => ({ report: (_line: string): Effect.Effect<void> => Effect.void })
}) {}

/** One line of progress, when someone listens. */
export const progress = (line: string) => Effect.flatMap(StartupProgress, (p) => p.report(line))

/** `[ 1.2 s] line` on standard output: performance.now() counts from the process's start. */
export const PrintedProgress = Layer.succeed(StartupProgress, {
  report: (line) => Console.log(`[${(performance.now() / 1000).toFixed(1).padStart(5)} s] ${line}`)
})
