import { Schema } from "effect"

/** Laravel's length-aware paginator, which the clients of this API already read. */
export const Paginated = <A, I, R>(item: Schema.Schema<A, I, R>) =>
  Schema.Struct({
    current_page: Schema.Int,
    data: Schema.Array(item),
    first_page_url: Schema.String,
    from: Schema.NullOr(Schema.Int),
    last_page: Schema.Int,
    last_page_url: Schema.String,
    next_page_url: Schema.NullOr(Schema.String),
    path: Schema.String,
    per_page: Schema.Int,
    prev_page_url: Schema.NullOr(Schema.String),
    to: Schema.NullOr(Schema.Int),
    total: Schema.Int
  })

export interface Page<A> {
  readonly current_page: number
  readonly data: ReadonlyArray<A>
  readonly first_page_url: string
  readonly from: number | null
  readonly last_page: number
  readonly last_page_url: string
  readonly next_page_url: string | null
  readonly path: string
  readonly per_page: number
  readonly prev_page_url: string | null
  readonly to: number | null
  readonly total: number
}

/** Builds the paginator around one page of rows; `url` is the request URL (its other parameters are kept). */
export const toPage = <A>(rows: ReadonlyArray<A>, total: number, page: number, perPage: number, url: URL): Page<A> => {
  const lastPage = Math.max(1, Math.ceil(total / perPage))
  const pageUrl = (n: number) => {
    const u = new URL(url)
    u.searchParams.set("page", String(n))
    return u.toString()
  }
  const from = rows.length > 0 ? (page - 1) * perPage + 1 : null
  return {
    current_page: page,
    data: rows,
    first_page_url: pageUrl(1),
    from,
    last_page: lastPage,
    last_page_url: pageUrl(lastPage),
    next_page_url: page < lastPage ? pageUrl(page + 1) : null,
    path: `${url.origin}${url.pathname}`,
    per_page: perPage,
    prev_page_url: page > 1 ? pageUrl(page - 1) : null,
    to: from === null ? null : from + rows.length - 1,
    total
  }
}
