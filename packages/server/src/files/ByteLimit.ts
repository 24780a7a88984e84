import { Effect, Stream } from "effect"

/**
 * The stream as it is, until it has carried more than `maxBytes`: then it fails with `tooLarge` (given the bytes
 * seen so far), so a download over a limit stops there instead of being read to its end.
 */
export const limitBytes =
  <E2>(maxBytes: number, tooLarge: (seen: number) => E2) =>
  <E, R>(self: Stream.Stream<Uint8Array, E, R>): Stream.Stream<Uint8Array, E | E2, R> =>
    Stream.mapAccumEffect(self, 0, (seen, chunk) => {
      const total = seen + chunk.byteLength
      return total > maxBytes ? Effect.fail(tooLarge(total)) : Effect.succeed([total, chunk] as const)
    })
