import {
  type ChannelId,
  classifyFile,
  conversationChannel,
  type ConversationId,
  CurrentChannel,
  type FileEntry,
  FileEntryWithUrl,
  Forbidden,
  type HistoryQuery,
  type InitiatePayload,
  PublicBaseUrl,
  RequestUrl,
  signSocketToken,
  toPage,
  ulid,
  Unauthorized,
  Unprocessable,
  type WebChannel,
  WebChatSession
} from "@parley/domain"
import { Effect, Option, Redacted } from "effect"
import { ChannelCache } from "../channels/ChannelCache.js"
import { InboundMessages } from "../channels/InboundMessages.js"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { FileStorage } from "../files/FileStorage.js"
import { BoundAddresses } from "../http/Listener.js"
import { equalSecrets } from "../identity/Secrets.js"
import { WebChatRepo } from "./WebChatRepo.js"
import { type ThreadChannel, WebChatThreads } from "./WebChatThreads.js"

export const invalidCredentials = new Unauthorized({ message: "Invalid client credentials" })
const notWeb = Unprocessable.of([{ field: "client_id", message: "This endpoint is only available for web channels." }])
const unauthorized = new Forbidden({ message: "Unauthorized" })

export interface Inbound {
  readonly contactKey: string
  readonly message: string
  readonly files: ReadonlyArray<FileEntry>
  readonly attachments: ReadonlyArray<unknown>
}

/**
 * The web-chat channel (SPEC.md 4.4): Basic credentials, Initiate, the receiver's inbound messages and
 * the history. Inbound messages are committed before anyone is told they arrived.
 */
export class WebChat extends Effect.Service<WebChat>()("@parley/server/WebChat", {
  dependencies: [
    WebChatRepo.Default,
    WebChatThreads.Default,
    ChannelCache.Default,
    AppSecret.Default,
    AppConfig.Default,
    FileStorage.Default,
    BoundAddresses.Default,
    InboundMessages.Default
  ],
  scoped: Effect.gen(function*() {
    const repo = yield* WebChatRepo
    const threads = yield* WebChatThreads
    const channelCache = yield* ChannelCache
    const secrets = yield* AppSecret
    const config = yield* AppConfig
    const files = yield* FileStorage
    const bound = yield* BoundAddresses
    const inboundMessages = yield* InboundMessages

    /** The receiver's public base: RECEIVER_URL, else where this process's receiver bound, else HOST:RECEIVER_PORT. */
    const receiverUrl = Effect.map(bound.receiver, (url) => receiverBaseUrl(config, url))

    const channelRow = (clientId: string) => channelCache.get(clientId, repo.channelByClientId(clientId))
    const decrypted = new Map<string, string>()
    const secretOf = (ciphertext: string) => {
      let plain = decrypted.get(ciphertext)
      if (plain === undefined) {
        plain = secrets.decrypt(ciphertext)
        if (decrypted.size >= 10_000) decrypted.clear()
        decrypted.set(ciphertext, plain)
      }
      return plain
    }

    /** 401 for unknown or inactive channels and wrong secrets; 422 for a channel of another kind. */
    const authenticate = Effect.fn("WebChat.authenticate")(
      function*(clientId: string, secret: Redacted.Redacted<string>) {
        const row = yield* channelRow(clientId)
        if (Option.isNone(row) || !row.value.is_active) return yield* invalidCredentials
        const channel = row.value
        if (channel.kind !== "web") return yield* notWeb
        const stored = channel.secret_ciphertext === null ? null : secretOf(channel.secret_ciphertext)
        if (stored === null || !equalSecrets(stored, Redacted.value(secret))) return yield* invalidCredentials
        const web: WebChannel = {
          id: channel.id,
          workspace_id: channel.workspace_id,
          pipeline_id: channel.pipeline_id,
          client_id: clientId,
          secret: stored,
          callback_url: channel.callback_url,
          allowed_origins: channel.allowed_origins,
          allowed_ips: channel.allowed_ips
        }
        return web
      }
    )

    /** The session fields of SPEC.md 2.8 for one conversation: receiver, socket channel, join token. */
    const sessionFields = (contactKey: string, conversationId: ConversationId) =>
      Effect.gen(function*() {
        const base = yield* PublicBaseUrl
        return {
          contact_id: contactKey,
          conversation_id: conversationId,
          messages_webhook: yield* receiverUrl,
          channel: conversationChannel(conversationId),
          token: signSocketToken(secrets.socketKey, conversationId, Math.floor(Date.now() / 1000)),
          socket_url: base,
          app_key: secrets.socketAppKey,
          event: "new_message" as const
        }
      })

    const initiate = Effect.fn("WebChat.initiate")(function*(input: InitiatePayload) {
      const channel = yield* CurrentChannel
      const contactKey = input.contact_id ?? ulid()
      const thread = yield* threads.open(channel, contactKey, input)
      return new WebChatSession(yield* sessionFields(contactKey, thread.conversationId))
    })

    /**
     * One inbound message through the one inbound path (InboundMessages): stored with its files, once per
     * Idempotency-Key (a repeated key answers the first id), then handed to its conversation's entity.
     */
    const receive = Effect.fn("WebChat.receive")(function*(
      channel: ThreadChannel,
      inbound: Inbound,
      idempotencyKey: string | undefined,
      newFiles: ReadonlyArray<{ key: string; name: string; mimetype: string; size: number }>
    ) {
      const accepted = yield* inboundMessages.accept(channel, {
        thread: inbound.contactKey,
        text: inbound.message,
        files: inbound.files,
        newFiles,
        attachments: inbound.attachments,
        providerMessageId: null,
        sentAt: null,
        callType: "web_chat"
      }, { idempotencyKey })
      return accepted.messageId
    })

    const withUrls = (base: string, entries: ReadonlyArray<unknown>) =>
      (entries as ReadonlyArray<FileEntry>).map((f) =>
        new FileEntryWithUrl({ ...f, url: base + files.signedPath(f.path) })
      )

    /** One page of a conversation's messages, newest first, files with signed URLs. */
    const historyOf = (conversationId: ConversationId, page: number, perPage: number) =>
      Effect.gen(function*() {
        const [rows, total] = yield* repo.history(conversationId, page, perPage)
        const base = yield* PublicBaseUrl
        const messages = rows.map((m) => ({ ...m, files: withUrls(base, m.files) }))
        return toPage(messages, total, page, perPage, yield* RequestUrl)
      })

    const history = Effect.fn("WebChat.history")(function*(query: HistoryQuery) {
      const channel = yield* CurrentChannel
      const conversationId = yield* repo.findThread(channel.id, {
        contactKey: query.contact_id,
        conversationId: query.conversation_id
      })
        .pipe(Effect.flatMap(Option.match({ onNone: () => Effect.fail(unauthorized), onSome: Effect.succeed })))
      return yield* historyOf(conversationId, query.page, query.per_page)
    })

    /** A file this channel uploaded before, as the entry a message carries (JSON bodies reference them by key). */
    const storedFile = (channel: Pick<WebChannel, "workspace_id">, key: string) =>
      repo.fileByKey(channel.workspace_id, key).pipe(Effect.map(Option.map((f): FileEntry => ({
        path: f.key,
        mimetype: f.mimetype,
        type: classifyFile(f.mimetype),
        size: f.size,
        name: f.name
      }))))

    return {
      authenticate,
      initiate,
      openThread: threads.open,
      sessionFields,
      receive,
      history,
      historyOf,
      storedFile,
      channelRow
    }
  })
}) {}

export type { ChannelId }
