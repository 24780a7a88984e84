/**
 * What a starting process says it is doing (opening the database, migrating, starting the engine,
 * seeding the demo), each line with the seconds since the process started, so a slow start shows where
 * its time goes. Silent unless `parley serve` provides the printer (tests and the CLI say nothing).
 */
import { Console, Context, Effect, Layer } from "effect"
import { AppConfig } from "./config/AppConfig.js"

export class StartupProgress extends Context.Reference<StartupProgress>()("@parley/server/StartupProgress", {
  defaultValue: () => ({ report: (_line: string): Effect.Effect<void> => Effect.void })
}) {}

/** One line of progress, when someone listens. */
export const progress = (line: string) => Effect.flatMap(StartupProgress, (p) => p.report(line))

/** A line for people, or (LOG_FORMAT=json) one JSON object like the log's, printed whatever the log level. */
export const printLine = (format: "text" | "json", text: string, fields: Record<string, unknown> = {}) =>
  Console.log(
    format === "json"
      ? JSON.stringify({ time: new Date().toISOString(), level: "INFO", message: text, ...fields })
      : text
  )

/** `[ 1.2 s] line` on standard output: performance.now() counts from the process's start. */
export const PrintedProgress = Layer.unwrapEffect(Effect.map(AppConfig, (config) =>
  Layer.succeed(StartupProgress, {
    report: (line) => {
      const seconds = performance.now() / 1000
      return printLine(
        config.logFormat,
        config.logFormat === "json" ? line : `[${seconds.toFixed(1).padStart(5)} s] ${line}`,
        {
          startup_seconds: Number(seconds.toFixed(3))
        }
      )
    }
  })))
