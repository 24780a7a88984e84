/**
 * A template's text with its body parameters: plain functions with no imports, so the console (which takes only
 * types from this package) can show what the contact will read with the same code that stores it.
 */

/** A template's body with its parameters filled in: what the contact sees, and what the history stores. */
export const templateText = (
  template: { readonly name: string; readonly parameters: ReadonlyArray<string> },
  body: string | null
): string =>
  body === null
    ? `[template ${template.name}${template.parameters.length > 0 ? `: ${template.parameters.join(" | ")}` : ""}]`
    : body.replace(/\{\{\s*(\d+)\s*\}\}/g, (whole, n: string) => template.parameters[Number(n) - 1] ?? whole)

/** How many body parameters a template's text asks for (its highest `{{n}}`). */
export const templateParameterCount = (body: string | null) =>
  body === null ? 0 : Math.max(0, ...[...body.matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((m) => Number(m[1])))
