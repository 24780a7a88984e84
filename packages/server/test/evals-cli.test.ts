/**
 * `parley eval run` as a customer's CI runs it (docs/evals.md): a child process reading YAML and JSON case
 * files, talking to a real server over REST, verdicts on stderr, exit code 0 only when every case passed.
 */
import { expect, layer } from "@effect/vitest"
import { EvalRun } from "@parley/domain"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { run, testTimeout } from "./support/Cli.js"
import { createStage, ok, post, put } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"

const YAML_CASES = `# two cases in one file, as a list
- name: refunds take five days
  messages:
    - What about a refund?
  expect:
    reply_contains: 5 business days
    max_ai_messages: 1
- name: shipping
  messages: ["When do you ship?"]
  expect:
    reply_matches: "ship\\\\w*"
`

const JSON_CASE = JSON.stringify({
  name: "a person on request",
  messages: ["Can I talk to a human?"],
  expect: { handoff: false }
})

layer(TestServerLive(), { excludeTestServices: true })("parley eval run", (it) => {
  it.effect(
    "exits 0 when every case passes, 1 once one fails, 2 on a usage error; verdicts on stderr, the run with --json",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const pipeline = ok(
          yield* post(owner, "/api/user/pipelines", {
            name: "CI",
            agent_type_id: 1,
            ai_model_id: 1,
            language_id: 1,
            reply_debounce_ms: 0,
            instructions: "On refunds, say “Refunds take 5 business days.” On shipping, say “We ship every weekday.”"
          }),
          "pipelines.create"
        )
        yield* createStage(owner, pipeline.id, "Open", 1)
        const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-evals-"))
        Fs.mkdirSync(Path.join(dir, "evals"))
        Fs.writeFileSync(Path.join(dir, "evals", "support.yaml"), YAML_CASES)
        const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-data-"))
        const cli = (args: ReadonlyArray<string>) =>
          Effect.promise(() => run(dataDir, ["eval", "run", "--url", baseUrl, "--token", owner.token, ...args]))

        const passing = yield* cli(["--pipeline", String(pipeline.id), "--cases", Path.join(dir, "evals", "*.yaml")])
        expect(passing.code, passing.stderr).toBe(0)
        expect(passing.stderr).toContain("PASS refunds take five days")
        expect(passing.stderr).toContain("PASS shipping")
        expect(passing.stdout).toMatch(/^Eval run \d+ passed: 2 passed, 0 failed of 2/)

        // the human case fails (the local model asks for a person) and the instructions no longer say five days
        Fs.writeFileSync(Path.join(dir, "evals", "handoff.json"), JSON_CASE)
        ok(
          yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
            instructions: "On refunds, say “Refunds take two weeks.” On shipping, say “We ship every weekday.”"
          }),
          "pipelines.update"
        )
        const failing = yield* cli([
          "--pipeline",
          String(pipeline.id),
          "--cases",
          Path.join(dir, "evals", "support.yaml"),
          Path.join(dir, "evals", "handoff.json"),
          "--json"
        ])
        expect(failing.code, failing.stderr).toBe(1)
        expect(failing.stderr).toContain("FAIL refunds take five days")
        expect(failing.stderr).toContain("reply_contains: expected \"5 business days\".")
        // the run as REST answers it
        const runJson = Schema.decodeUnknownSync(EvalRun)(JSON.parse(failing.stdout))
        expect(runJson).toMatchObject({ status: "failed", cases: 3, passed: 1, failed: 2 })
        expect(runJson.comparison).toMatchObject({ newly_failing: ["refunds take five days"] })

        const usage = yield* cli(["--cases", Path.join(dir, "evals", "support.yaml")])
        expect(usage.code).toBe(2)
        expect(usage.stderr).toContain("eval run needs --pipeline N")
        Fs.writeFileSync(Path.join(dir, "evals", "bad.yaml"), "name: nowhere\nstage: Nowhere\nmessages: [hi]\n")
        const refused = yield* cli(["--pipeline", String(pipeline.id), "--cases", Path.join(dir, "evals", "bad.yaml")])
        expect(refused.code).toBe(2)
        expect(refused.stderr).toContain(
          `${Path.join(dir, "evals", "bad.yaml")}: stage: The cases.0.stage field is not a stage of this pipeline.`
        )
      }),
    { timeout: testTimeout }
  )
})
