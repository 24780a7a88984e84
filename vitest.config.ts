import { defineConfig } from "vitest/config"

/**
 * Two projects. `embedded`: every suite, on the embedded database (PGlite, the default). `postgres`
 * (PARLEY_TEST_DATABASE=postgres): every server suite again on native Postgres 15, except those listed in
 * `embeddedOnly` below, and the *.postgres.test.ts suites, which need the native cluster itself. The
 * global setup (packages/server/test/support/globalSetup.ts) starts a throwaway cluster with a migrated
 * template database; a suite gets a database of its own from it whichever way it runs the server
 * (support/NativeDatabase.ts): in-process (TestServer.ts, FileServer.ts), as a `parley serve` child
 * (ChildServer.ts: childDatabase), or as several stacks on one database (cluster, realtime, CLI).
 */
const serverTests = "packages/server/test"

/** Suites that run on the embedded database only, and why. */
const embeddedOnly: Record<string, string> = {
  "pglite-client.test.ts": "the embedded SqlClient (PGlite) itself",
  "embedded-vacuum.test.ts": "the embedded database's own vacuum (a Postgres server runs autovacuum)",
  "cli.test.ts":
    "the CLI on an embedded data dir: its lock and the server's admin endpoint (DATABASE_URL: cli-database-url.test.ts)",
  "docs-examples.test.ts": "runs the docs as written, on the default `parley serve`",
  "listener.test.ts": "no database: a listener between binding and serving",
  "providers.test.ts": "no database: the model providers against fake servers",
  "chat-completions.test.ts": "no database: the OpenAI-compatible client and Gemini against a fake model server",
  "knowledge-chunker.test.ts": "no database: documents of knowledge sources and their chunks",
  "source-fetch.test.ts": "no database: fetching knowledge sources' pages from a local site",
  "*.browser.test.ts":
    "UI suites in headless Chromium: what they show comes through the API, which the HTTP suites cover on Postgres"
}

export default defineConfig({
  test: {
    globalSetup: ["packages/server/test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // two suites at a time even on two cores (vitest's default leaves one core free): most of a suite's
    // time is spent waiting on timers, child processes and sockets, not on the CPU
    maxWorkers: 2,
    minWorkers: 1,
    // a worker keeps its module graph from one suite to the next (each suite builds its own server, database
    // and layers; none changes process.env or mocks a module): importing the server for every suite cost
    // about a quarter of the run
    isolate: false,
    projects: [
      {
        extends: true,
        // also the browser suites (*.browser.test.ts: headless Chromium), which run here only
        test: {
          name: "embedded",
          include: ["packages/*/test/**/*.test.ts"],
          exclude: [`${serverTests}/**/*.postgres.test.ts`, "**/node_modules/**"]
        }
      },
      {
        extends: true,
        test: {
          name: "postgres",
          include: [`${serverTests}/**/*.test.ts`],
          exclude: [...Object.keys(embeddedOnly).map((file) => `${serverTests}/**/${file}`), "**/node_modules/**"],
          env: { PARLEY_TEST_DATABASE: "postgres" }
        }
      }
    ]
  }
})
