/**
 * `pnpm parley <command>`: the operator's tool. Prints results for people, or JSON with `--json`.
 * Only what a command needs is loaded: `--help` answers without the server, `serve` loads the server,
 * `providers` and `models` their REST client (Models.ts), `knowledge add-source|sources|sync` theirs
 * (KnowledgeSources.ts), other commands the command runner (Run.ts).
 */
import { parseArgs } from "node:util"
import { USAGE } from "./Usage.js"

const argv = parseArgs({
  args: process.argv.slice(2),
  options: { help: { type: "boolean", short: "h" }, role: { type: "string" } },
  allowPositionals: true,
  strict: false
})
const words = argv.positionals

if (argv.values.help === true || words.length === 0) {
  console.log(USAGE)
  process.exit(words.length === 0 && argv.values.help !== true ? 2 : 0)
}

if (words[0] === "serve") {
  const role = typeof argv.values.role === "string" ? argv.values.role : "all"
  if (!["all", "api", "receiver", "worker"].includes(role)) {
    console.error(`Unknown role: ${role}\n\n${USAGE}`)
    process.exit(2)
  }
  const { launch } = await import("./Serve.js")
  launch(role as "all" | "api" | "receiver" | "worker")
} else if (words[0] === "eval") {
  const { options, runEval } = await import("./Eval.js")
  const parsed = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: false })
  runEval(parsed.positionals, parsed.values as never)
} else if (words[0] === "providers" || words[0] === "models") {
  const { options, runModels } = await import("./Models.js")
  const parsed = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: false })
  runModels(parsed.positionals, parsed.values as never, USAGE)
} else if (words[0] === "knowledge" && ["add-source", "sources", "sync"].includes(words[1] ?? "")) {
  const { options, runKnowledgeSources } = await import("./KnowledgeSources.js")
  const parsed = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: false })
  runKnowledgeSources(parsed.positionals, parsed.values as never, USAGE)
} else {
  const { options, runCli } = await import("./Run.js")
  const parsed = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: false })
  runCli(parsed.positionals, parsed.values as never)
}
