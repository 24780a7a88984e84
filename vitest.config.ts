import { defineConfig } from "vitest/config"

/**
 * Two projects: every suite on the embedded client, and the HTTP suites again with DATABASE_URL-style
 * access through @effect/sql-pg to a PGlite socket server, so the production driver runs on every run.
 */
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
    projects: [
      {
        extends: true,
        // also the browser suite (*.browser.test.ts: headless Chromium), which runs here only
        test: { name: "embedded", include: ["packages/*/test/**/*.test.ts"], exclude: ["packages/server/test/**/*.postgres.test.ts", "**/node_modules/**"] }
      },
      {
        extends: true,
        test: {
          name: "postgres",
          // *.postgres.test.ts: suites that need the native cluster itself (several processes on one database)
          include: [
            "packages/server/test/**/*.http.test.ts",
            "packages/server/test/**/*.postgres.test.ts",
            // in-process servers (TestServerLive) not named *.http.test.ts
            "packages/server/test/agent.test.ts",
            "packages/server/test/agent-openai.test.ts",
            "packages/server/test/conversation-engine.test.ts",
            "packages/server/test/followups.test.ts",
            // `parley serve` child processes (support/ChildServer.ts: childDatabase gives them DATABASE_URL)
            "packages/server/test/actions-restart.test.ts",
            "packages/server/test/delivery-restart.test.ts",
            "packages/server/test/reply-restart.test.ts",
            "packages/server/test/knowledge-reembed.test.ts",
            "packages/server/test/observability.test.ts",
            "packages/server/test/knowledge-import.test.ts",
            "packages/server/test/startup.test.ts",
            // in-process servers restarted on one database (support/FileServer.ts)
            "packages/server/test/followups-restart.test.ts",
            "packages/server/test/handoff-restart.test.ts",
            "packages/server/test/startup-model-keys.test.ts",
            // several stacks on one Postgres: pglite-socket on the embedded run, a native database here
            "packages/server/test/cluster.test.ts",
            "packages/server/test/cli-database-url.test.ts"
          ],
          env: { PARLEY_TEST_DATABASE: "postgres" }
        }
      }
    ]
  }
})
