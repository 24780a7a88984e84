/** Reading the realtime socket's events, whose payloads the tests receive untyped. */

/** A field of an event's payload, when the payload is an object (or array) that has it. */
export const fieldOf = (payload: unknown, name: string): unknown =>
  typeof payload === "object" && payload !== null
    ? Object.entries(payload).find(([key]) => key === name)?.[1]
    : undefined
