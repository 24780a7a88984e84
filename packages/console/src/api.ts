/**
 * The console's client of the public REST API: typed by the `domain` contract (wire shapes of its
 * schemas, type imports only), authenticated by a short-lived token that `POST /console/token` gives the
 * signed-in session. The token lives in this module's memory only and is renewed before it runs out.
 */
import type {
  AiModelRecord,
  AiProviderRecord,
  Channel,
  ChannelCheck,
  ChannelTemplate,
  ChannelWithSecret,
  ConversationDetail,
  ConversationListItem,
  ConversationMessage,
  ConversationMessagesPage,
  ConversationsPage,
  HandoffStats,
  KnowledgeSource,
  KnowledgeTableWithColumns,
  Me,
  Opportunity,
  Pipeline,
  ProviderCheck,
  SearchResults,
  Stage,
  Timeseries
} from "@parley/domain"

/** What a schema's JSON looks like on the wire. */
type Wire<S extends { readonly Encoded: unknown }> = S["Encoded"]

export type ChannelRecord = Wire<typeof Channel>
export type ChannelCreated = Wire<typeof ChannelWithSecret>
export type ChannelCheckResult = Wire<typeof ChannelCheck>
export type Conversation = Wire<typeof ConversationListItem>
export type ConversationFull = Wire<typeof ConversationDetail>
export type Message = Wire<typeof ConversationMessage>
export type MessagesPage = Wire<typeof ConversationMessagesPage>
export type ConversationList = Wire<typeof ConversationsPage>
export type MeInfo = Wire<typeof Me>
export type OpportunityRecord = Wire<typeof Opportunity>
export type PipelineRecord = Wire<typeof Pipeline>
export type StageRecord = Wire<typeof Stage>
export type Template = Wire<typeof ChannelTemplate>
export type Series = Wire<typeof Timeseries>
export type Handoffs = Wire<typeof HandoffStats>
export type AiProvider = Wire<typeof AiProviderRecord>
export type AiModel = Wire<typeof AiModelRecord>
export type AiProviderCheck = Wire<typeof ProviderCheck>
export type KnowledgeTableRecord = Wire<typeof KnowledgeTableWithColumns>
export type KnowledgeSourceRecord = Wire<typeof KnowledgeSource>
export type KnowledgeSearchResults = Wire<typeof SearchResults>
export interface Member {
  readonly id: number
  readonly name: string | null
  readonly email: string
  readonly role: "owner" | "manager"
}
export interface OpportunityPage {
  readonly data: ReadonlyArray<OpportunityRecord>
  readonly total: number
  readonly current_page: number
  readonly last_page: number
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly validation: ReadonlyArray<{ field: string; message: string }> = []
  ) {
    super(message)
  }
}

const csrf = () => document.querySelector<HTMLMetaElement>("meta[name=parley-csrf]")?.content ?? ""

interface Token {
  readonly value: string
  readonly renewAt: number
}
let token: Token | undefined
let pending: Promise<string> | undefined
const tokenListeners = new Set<(token: string) => void>()

/** Called with each new token (the socket re-joins with it). */
export const onToken = (listener: (token: string) => void) => {
  tokenListeners.add(listener)
  return () => tokenListeners.delete(listener)
}

const signIn = () => {
  location.assign(`/account/sign-in?return_to=${encodeURIComponent(location.pathname + location.search)}`)
  return new Promise<never>(() => {})
}

const fetchToken = async (): Promise<string> => {
  const response = await fetch("/console/token", {
    method: "POST",
    headers: { "x-csrf-token": csrf() },
    credentials: "same-origin"
  })
  if (response.status === 401) return signIn()
  if (!response.ok) throw new ApiError(response.status, "The console could not get a token. Reload the page.")
  const body = (await response.json()) as { access_token: string; expires_in: number }
  token = { value: body.access_token, renewAt: Date.now() + body.expires_in * 1000 * (2 / 3) }
  for (const listener of tokenListeners) listener(body.access_token)
  return body.access_token
}

/** The current token, renewed when two thirds of its life have passed. */
export const currentToken = (): Promise<string> => {
  if (token !== undefined && Date.now() < token.renewAt) return Promise.resolve(token.value)
  pending ??= fetchToken().finally(() => {
    pending = undefined
  })
  return pending
}

// renew in the background too, so a socket re-join never waits for an expired token
setInterval(() => void currentToken().catch(() => undefined), 60_000)

type Query = Record<string, string | number | boolean | undefined | null>

const withQuery = (path: string, query: Query | undefined) => {
  if (query === undefined) return path
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value))
  }
  const text = params.toString()
  return text === "" ? path : `${path}?${text}`
}

/** One call of `/api/user/...`: the envelope's `data`, or an ApiError with its status, message and validation. */
export const api = async <A>(
  method: string,
  path: string,
  options: { query?: Query; json?: unknown; form?: FormData } = {}
): Promise<A> => {
  const send = async (bearer: string) =>
    fetch(withQuery(`/api/user/${path}`, options.query), {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        accept: "application/json",
        ...(options.json !== undefined ? { "content-type": "application/json" } : {})
      },
      body: options.form ?? (options.json !== undefined ? JSON.stringify(options.json) : null)
    })
  let response = await send(await currentToken())
  if (response.status === 401) {
    // the session's token was swept or the session ended: one fresh token, then sign in
    token = undefined
    response = await send(await currentToken())
  }
  const body = (await response.json().catch(() => null)) as {
    data?: A
    message?: string
    validation?: Array<{ field: string; message: string }>
  } | null
  if (!response.ok || body === null) {
    throw new ApiError(
      response.status,
      body?.message ?? `The server answered ${response.status}.`,
      body?.validation ?? []
    )
  }
  return body.data as A
}
