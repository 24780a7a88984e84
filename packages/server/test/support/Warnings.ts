/** Warning log lines of the server under test, as a logger added to its layer records them. */
import { HashMap, Logger } from "effect"

export interface Warning {
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** `warnings` fills as `layer` (provided to the server) sees Warning lines. */
export const captureWarnings = () => {
  const warnings: Array<Warning> = []
  const layer = Logger.add(Logger.make(({ annotations, logLevel, message }) => {
    if (logLevel._tag !== "Warning") return
    warnings.push({
      message: Array.isArray(message) ? message.map(String).join(" ") : String(message),
      annotations: Object.fromEntries(HashMap.toEntries(annotations))
    })
  }))
  return { warnings, layer }
}
