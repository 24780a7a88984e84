/**
 * The adapters by channel kind (docs/channels.md, "The channel layer"). Everything outside an adapter asks this
 * registry, so nothing about a provider is special-cased elsewhere: what its credentials hold, how they are
 * completed on create, the endpoint its sends are logged under.
 */
import type { ChannelProvider } from "@parley/domain"
import { Effect, Option, type Schema } from "effect"
import { randomBase62 } from "../identity/Secrets.js"
import { DEFAULT_API_VERSION, WhatsApp, WhatsAppCredentialsInput } from "./whatsapp/WhatsApp.js"

/** One provider kind as the channel layer sees it. `any`: each entry keeps its own credentials' type. */
export interface ProviderEntry {
  readonly provider: ChannelProvider<any>
  /** What `credentials` must hold on create and update (422 naming `credentials.<field>` otherwise). */
  readonly input: Schema.Schema<any, any, never>
  /** The stored credentials for a checked input: generated and default fields filled. */
  readonly complete: (input: any) => Record<string, unknown>
  /** What the create answer shows once besides the webhook URL (never a token or secret). */
  readonly shown: (stored: any) => Record<string, string>
  /** Where sends go, for the delivery log. */
  readonly endpoint: (stored: any) => string
}

export class ChannelProviders extends Effect.Service<ChannelProviders>()("@parley/server/ChannelProviders", {
  dependencies: [WhatsApp.Default],
  effect: Effect.gen(function*() {
    const whatsapp = yield* WhatsApp
    const entries: Record<string, ProviderEntry> = {
      whatsapp: {
        provider: whatsapp.provider,
        input: WhatsAppCredentialsInput,
        complete: (input: typeof WhatsAppCredentialsInput.Type) => ({
          ...input,
          verify_token: input.verify_token ?? `pvt_${randomBase62(32)}`,
          api_version: input.api_version ?? DEFAULT_API_VERSION
        }),
        shown: (stored: { verify_token: string }) => ({ verify_token: stored.verify_token }),
        endpoint: whatsapp.endpoint
      }
    }
    return {
      forKind: (kind: string): Option.Option<ProviderEntry> => Option.fromNullable(entries[kind]),
      kinds: Object.keys(entries)
    }
  })
}) {}
