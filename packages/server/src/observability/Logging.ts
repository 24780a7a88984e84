/**
 * Log level (LOG_LEVEL) and format (LOG_FORMAT). `json` writes one object a line: time, level, message,
 * the cause when there is one, the trace and span ids of the current span, and the annotations in scope
 * (request_id from the request guard, workspace_id after authentication, conversation_id in a turn).
 */
import {
  Cause,
  Config,
  ConfigError,
  Context,
  Effect,
  Either,
  FiberRef,
  FiberRefs,
  HashMap,
  Layer,
  Logger,
  LogLevel,
  Option,
  Tracer
} from "effect"
import { AppConfig } from "../config/AppConfig.js"

const levels: Record<string, LogLevel.LogLevel> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
  off: LogLevel.None
}

/** `LOG_LEVEL`: Trace, Debug, Info, Warning, Error, Fatal or None (any case). */
const LogLevelLive = Layer.unwrapEffect(
  Config.string("LOG_LEVEL").pipe(
    Config.withDefault("info"),
    Config.mapOrFail((value) => {
      const level = levels[value.toLowerCase()]
      return level
        ? Either.right(level)
        : Either.left(ConfigError.InvalidData([], `Expected one of ${Object.keys(levels).join(", ")}, got ${value}`))
    }),
    Effect.map(Logger.minimumLogLevel)
  )
)

const currentSpan = (context: FiberRefs.FiberRefs) =>
  Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)

const messageText = (message: unknown) => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((p) => typeof p === "string" ? p : JSON.stringify(p)).join(" ")
}

/** One JSON object a line on standard output. */
export const jsonLogger = Logger.make(({ annotations, cause, context, date, logLevel, message }) => {
  const span = currentSpan(context)
  const entry: Record<string, unknown> = {
    time: date.toISOString(),
    level: logLevel.label,
    message: messageText(message),
    ...Object.fromEntries(HashMap.toEntries(annotations)),
    ...(Option.isSome(span) ? { trace_id: span.value.traceId, span_id: span.value.spanId } : {}),
    ...(Cause.isEmpty(cause) ? {} : { cause: Cause.pretty(cause, { renderErrorCause: true }) })
  }
  globalThis.console.log(JSON.stringify(entry))
})

// `runMain` swaps the default logger for the pretty one: whichever is installed, JSON takes its place
const LogFormatLive = Layer.unwrapEffect(Effect.map(AppConfig, (config) =>
  config.logFormat === "json"
    ? Layer.merge(
      Logger.replace(Logger.defaultLogger, jsonLogger),
      Logger.replace(Logger.prettyLoggerDefault, jsonLogger)
    )
    : Layer.empty))

export const LoggingLive = Layer.merge(LogLevelLive, LogFormatLive)
