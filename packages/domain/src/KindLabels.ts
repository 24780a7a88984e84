/**
 * A channel kind as operators name it: a channel's default name, the console's labels. Plain data with no imports,
 * so the console takes it as it takes TemplateText.ts.
 */
export const KIND_LABEL: Readonly<Record<string, string>> = {
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
