/**
 * The fake Bot API (FakeTelegram.ts) in a process of its own, for tests whose own process blocks while a shell runs
 * (docs-examples): `tsx fake-telegram-main.ts <token>` prints its URL on the first line and serves until killed.
 */
import { Effect } from "effect"
import { makeFakeTelegram } from "./FakeTelegram.js"

const token = process.argv[2]

Effect.runFork(
  Effect.scoped(Effect.gen(function*() {
    const fake = yield* makeFakeTelegram(token === undefined ? {} : { token })
    process.stdout.write(`${fake.url}\n`)
    return yield* Effect.never
  }))
)
