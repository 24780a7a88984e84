/**
 * Citations (issue 41, docs/knowledge.md "Citations"): the knowledge points a reply was given, recorded on the
 * assistant message, and the "Sources:" lines a pipeline with `cite_sources` ends its replies with. Pure: the
 * engine builds them from the turn's retrieval, the REST answers and the console read them back.
 */
import { Schema } from "effect"

/** A point a reply was given; for a point of a knowledge source, what it takes to cite it. */
export const MessageCitation = Schema.Struct({
  knowledge_table_id: Schema.Number,
  point_id: Schema.String.annotations({ description: "The point's `default_id`" }),
  source_id: Schema.NullOr(Schema.Number).annotations({
    description: "The knowledge source the point was read from; null for a point written by hand"
  }),
  title: Schema.NullOr(Schema.String),
  source: Schema.NullOr(Schema.String).annotations({ description: "The page's URL or the file's name" }),
  page: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "MessageCitation" })
export type MessageCitation = typeof MessageCitation.Type

/** A source's chunks are `src{source id}-...` (knowledge/SourcesRepo.ts `pointPrefix`). */
const SOURCE_POINT = /^src([1-9][0-9]*)-/

const text = (value: unknown) => typeof value === "string" && value.trim() !== "" ? value.trim() : null

/** The citation of a point from its table, `default_id` and data (the document columns `title`, `source`, `page`). */
export const citationOf = (
  knowledgeTableId: number,
  pointId: string,
  data: Readonly<Record<string, unknown>>
): MessageCitation => {
  const sourceId = pointId.match(SOURCE_POINT)?.[1]
  const page = typeof data.page === "number" && Number.isFinite(data.page) ? data.page : null
  return {
    knowledge_table_id: knowledgeTableId,
    point_id: pointId,
    source_id: sourceId === undefined ? null : Number(sourceId),
    title: text(data.title),
    source: text(data.source),
    page
  }
}

const isUrl = (source: string) => /^https?:\/\//i.test(source)

/**
 * One line per source the citations name, in the order first cited: `Title (https://...)` for a page, `Title
 * (file.pdf, pages 2, 5)` for a file. Points without a `source` (written by hand) are never cited.
 */
export const sourceLines = (citations: ReadonlyArray<MessageCitation>): Array<string> => {
  const bySource = new Map<string, { title: string | null; pages: Set<number> }>()
  for (const c of citations) {
    if (c.source === null) continue
    const seen = bySource.get(c.source) ?? { title: null, pages: new Set<number>() }
    seen.title ??= c.title
    if (c.page !== null) seen.pages.add(c.page)
    bySource.set(c.source, seen)
  }
  // one line each, whatever a crawled title holds: the footer is found again by its lines (withoutSources)
  const line = (s: string) => s.replace(/\s+/g, " ")
  return [...bySource.entries()].map(([source, { pages, title }]) => {
    const sorted = [...pages].sort((a, b) => a - b)
    const where = isUrl(source) || sorted.length === 0
      ? line(source)
      : `${line(source)}, ${sorted.length === 1 ? "page" : "pages"} ${sorted.join(", ")}`
    return title === null || title === source ? where : `${line(title)} (${where})`
  })
}

const HEADING = "Sources:"

/** The reply with its sources' lines after it; the reply alone when none of its points has a source. */
export const withSources = (reply: string, citations: ReadonlyArray<MessageCitation>) => {
  const lines = sourceLines(citations)
  return lines.length === 0 ? reply : `${reply}\n\n${HEADING}\n${lines.map((l) => `- ${l}`).join("\n")}`
}

const FOOTER = /\n\nSources:\n(?:- [^\n]*\n?)+$/

/** A stored reply without its sources' lines: what the model reads of its earlier replies (it does not copy them). */
export const withoutSources = (reply: string) => reply.replace(FOOTER, "")
