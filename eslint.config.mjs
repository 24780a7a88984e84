// The workspace's linter and formatter (docs/architecture.md, "House style"): typescript-eslint's
// recommended rules and Effect's dprint formatting rule with the settings of Effect's own repositories
// (120 columns, no semicolons, double quotes, no trailing commas). `pnpm lint` checks, `pnpm lint:fix`
// formats and fixes what it can.
import * as effectEslint from "@effect/eslint-plugin"
import eslint from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["**/dist/**", "**/node_modules/**", "test-results/**", "vendor/**", "patches/**", "**/*.js", "**/*.mjs", "**/*.cjs"] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    files: ["**/*.ts", "**/*.tsx"],
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" }],
      // the tests' untyped bodies are issue 37's next step; until then `any` is allowed where it is written
      "@typescript-eslint/no-explicit-any": "off"
    }
  },
  {
    // one writer per table (docs/architecture.md, "Who writes each table"): the SQL that writes these tables is
    // built only by their `tables/*Writes.ts` module; a repository embeds those fragments in its own statement
    files: ["packages/server/src/**/*.ts"],
    ignores: ["packages/server/src/db/migrations/**", "packages/server/src/tables/**"],
    rules: {
      "no-restricted-syntax": ["error", {
        selector: "TemplateElement[value.raw=/\\b(insert\\s+into|update|delete\\s+from)\\s+(messages|message_parts|conversations|workspaces)\\b/i]",
        message: "messages, message_parts, conversations and workspaces are written only by packages/server/src/tables (MessageWrites, MessagePartWrites, ConversationWrites, WorkspaceWrites)."
      }]
    }
  }
)
