/**
 * What the knowledge-source tests share: a document table's columns as a client writes them (docs/knowledge.md), and
 * the server settings they run with (a new source taken within 0.1 s, the local test site reachable and unpaced).
 */
export const documentColumns = [
  { name: "text", data_type: "string", order: 1, is_searchable: true },
  { name: "title", data_type: "string", order: 2 },
  { name: "section", data_type: "string", order: 3 },
  { name: "source", data_type: "string", order: 4, is_filterable: true },
  { name: "page", data_type: "number", order: 5 }
]

export const SOURCES_ENV = {
  KNOWLEDGE_SOURCES_POLL_MS: "100",
  OUTBOUND_ALLOW_PRIVATE: "true",
  SOURCE_HOST_DELAY_MS: "0"
}
