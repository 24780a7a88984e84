import type { ChannelKind } from "@parley/domain"

/** A channel's name when it is created without one. */
export const kindLabel: Record<ChannelKind, string> = {
  web: "Web chat",
  widget: "Website widget",
  whatsapp: "WhatsApp",
  messenger: "Messenger",
  instagram: "Instagram",
  linkedin: "LinkedIn",
  telegram: "Telegram",
  email: "Email",
  sms: "SMS"
}
