/**
 * The API reference's stylesheet and its one optional script, served as files (`/docs/reference.css`,
 * `/docs/reference.js`) so the page's CSP allows no inline style or script. The page reads the same
 * without the script: it only adds a box that filters the operations.
 */

export const referenceStylesheet = `:root {
  color-scheme: light dark;
  --fg: #1b1f24; --muted: #57606a; --bg: #ffffff; --panel: #f6f8fa; --line: #d0d7de; --link: #0550ae;
  --get: #116329; --get-bg: #dafbe1; --post: #0550ae; --post-bg: #ddf4ff; --put: #7d4e00; --put-bg: #fff8c5;
  --delete: #a40e26; --delete-bg: #ffebe9; --patch: #6639ba; --patch-bg: #fbefff;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --panel: #161b22; --line: #30363d; --link: #79c0ff;
    --get: #7ee787; --get-bg: #0f2d1a; --post: #79c0ff; --post-bg: #0c2d4a; --put: #e3b341; --put-bg: #3b2e05;
    --delete: #ffa198; --delete-bg: #490202; --patch: #d2a8ff; --patch-bg: #2d1a4a;
  }
}
* { box-sizing: border-box; }
html { scroll-padding-top: 1rem; }
body {
  margin: 0; color: var(--fg); background: var(--bg);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
a { color: var(--link); }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.875em; }
code { overflow-wrap: anywhere; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 0.75rem; overflow-x: auto; }
pre code { overflow-wrap: normal; }
.skip { position: absolute; left: -999px; top: 0; }
.skip:focus { left: 0.5rem; top: 0.5rem; z-index: 2; background: var(--bg); padding: 0.5rem; }
.banner {
  display: flex; flex-wrap: wrap; gap: 0.25rem 1.5rem; align-items: baseline; justify-content: space-between;
  padding: 0.75rem 1rem; border-bottom: 1px solid var(--line); background: var(--panel);
}
.banner p { margin: 0; }
.brand { font-weight: 600; }
.version { color: var(--muted); font-weight: 400; font-size: 0.875rem; margin-left: 0.25rem; }
.links { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; }
.layout { display: block; }
.toc { padding: 0 1rem; border-bottom: 1px solid var(--line); }
.toc h2 { font-size: 1rem; margin: 1rem 0 0.5rem; }
.toc ul { list-style: none; margin: 0; padding: 0; }
.toc ul ul { margin: 0.125rem 0 0.5rem; }
.toc li { margin: 0.125rem 0; }
.toc-group > a { font-weight: 600; }
.toc ul ul a { text-decoration: none; display: block; padding: 0.0625rem 0; }
.toc ul ul a:hover, .toc ul ul a:focus { text-decoration: underline; }
.filter { margin: 0 0 0.75rem; }
.filter label { display: block; font-size: 0.875rem; color: var(--muted); }
.filter input { width: 100%; font: inherit; padding: 0.375rem 0.5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
/* always rendered, so screen readers announce its changes; empty, it takes no room */
.filter-status { margin: 0; font-size: 0.875rem; color: var(--muted); }
main { padding: 0 1rem 3rem; max-width: 60rem; min-width: 0; }
h1 { font-size: 1.75rem; margin: 1rem 0 0.5rem; }
h2 { font-size: 1.375rem; margin: 2.5rem 0 0.5rem; padding-bottom: 0.25rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.125rem; margin: 1.5rem 0 0.25rem; }
h4 { font-size: 0.9375rem; margin: 1rem 0 0.25rem; }
.operation { border-top: 1px solid var(--line); margin-top: 1.5rem; padding-top: 0.25rem; }
.schema { border-top: 1px solid var(--line); margin-top: 1.5rem; }
/* the browser lays out only the sections near the viewport: most of the first load's time otherwise */
.operation, .schema { content-visibility: auto; contain-intrinsic-size: auto 40rem; }
.endpoint { margin: 0.25rem 0; }
.endpoint code { font-size: 0.9375rem; }
.security { margin: 0.25rem 0; color: var(--muted); }
.description p { margin: 0.375rem 0; }
.method {
  display: inline-block; min-width: 3.75em; text-align: center; border-radius: 4px; padding: 0 0.25em;
  font: 600 0.75rem/1.6 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--get); background: var(--get-bg);
}
.method-post { color: var(--post); background: var(--post-bg); }
.method-put { color: var(--put); background: var(--put-bg); }
.method-patch { color: var(--patch); background: var(--patch-bg); }
.method-delete { color: var(--delete); background: var(--delete-bg); }
.content-type { color: var(--muted); font-weight: 400; font-size: 0.875rem; margin-left: 0.25rem; }
table { width: 100%; border-collapse: collapse; margin: 0.25rem 0 0.75rem; font-size: 0.9375rem; }
th, td { text-align: left; vertical-align: top; padding: 0.375rem 0.5rem; border-bottom: 1px solid var(--line); }
thead th { font-size: 0.8125rem; color: var(--muted); font-weight: 600; }
tbody th { font-weight: 400; }
.fields tbody th { width: 40%; }
.fields td p, .responses td p { margin: 0 0 0.25rem; }
.field { font-weight: 600; display: block; }
.parent { color: var(--muted); font-weight: 400; }
.type { display: block; color: var(--muted); font-size: 0.8125rem; }
.required, .optional { display: inline-block; font-size: 0.75rem; font-weight: 600; color: var(--delete); }
.optional { color: var(--muted); font-weight: 400; }
.constraints, .values { color: var(--muted); font-size: 0.875rem; }
.depth-1 th { padding-left: 1.25rem; } .depth-2 th { padding-left: 2rem; } .depth-3 th { padding-left: 2.75rem; }
.depth-4 th, .depth-5 th, .depth-6 th, .depth-7 th, .depth-8 th { padding-left: 3.5rem; }
.top { font-size: 0.875rem; margin: 0.5rem 0 0; }
[hidden] { display: none !important; }
@media (min-width: 64rem) {
  .layout { display: grid; grid-template-columns: 20rem minmax(0, 1fr); }
  .toc { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow-y: auto; border-bottom: 0; border-right: 1px solid var(--line); padding-bottom: 1rem; }
  main { padding: 0 2rem 3rem; }
}
@media (max-width: 30rem) {
  th, td { padding: 0.375rem 0.25rem; }
  .fields tbody th { width: 45%; }
  .depth-1 th { padding-left: 0.75rem; } .depth-2 th { padding-left: 1.25rem; }
  .depth-3 th, .depth-4 th, .depth-5 th, .depth-6 th, .depth-7 th, .depth-8 th { padding-left: 1.75rem; }
}
`

export const referenceScript = `"use strict";
(() => {
  const box = document.getElementById("filter");
  const status = document.getElementById("filter-status");
  if (!box || !status) return;
  const operations = Array.from(document.querySelectorAll("section.operation"));
  const entries = new Map(Array.from(document.querySelectorAll("[data-operation]")).map((li) => [li.dataset.operation, li]));
  const groups = Array.from(document.querySelectorAll("section.group"));
  const tocGroups = Array.from(document.querySelectorAll(".toc-group"));
  box.parentElement.hidden = false;
  box.addEventListener("input", () => {
    const words = box.value.toLowerCase().split(/\\s+/).filter((w) => w !== "");
    let shown = 0;
    for (const section of operations) {
      const text = section.dataset.filter || "";
      const match = words.every((w) => text.includes(w));
      section.hidden = !match;
      const entry = entries.get(section.id);
      if (entry) entry.hidden = !match;
      if (match) shown++;
    }
    for (const group of groups) group.hidden = group.querySelector("section.operation:not([hidden])") === null;
    for (const group of tocGroups) group.hidden = group.querySelector("li[data-operation]:not([hidden])") === null;
    status.textContent = words.length === 0 ? "" : shown + " of " + operations.length + " operations";
  });
})();
`
