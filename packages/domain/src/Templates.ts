/**
 * Message templates (docs/channels.md, "The window and templates"): a provider with a customer service window
 * (WhatsApp) takes only a template the business had approved once the window closed. A stage's opening message, a
 * followup and the handoff bridge can name one to send outside the window; an operator sends one with `template`
 * instead of `message`. Body parameters are texts in which `{{variable}}` is replaced by the pipeline's variable of
 * that name (a `fixed` value or a `from_system` field of the opportunity or its stage).
 */
import { Schema } from "effect"
import { all, Text } from "./Schemas.js"

export const MAX_TEMPLATE_PARAMETERS = 20

/** A template to send: the provider's name and language, and one text per body parameter `{{1}}`, `{{2}}`, ... */
export class MessageTemplate extends Schema.Class<MessageTemplate>("MessageTemplate")({
  name: Schema.String.pipe(
    Schema.pattern(/^[a-z0-9_]{1,512}$/, {
      message: () => "must be the template's name: lowercase letters, digits and underscores, at most 512"
    })
  ).annotations({ description: "The approved template's name, as the provider lists it" }),
  language: Schema.String.pipe(
    Schema.pattern(/^[a-z]{2,3}(_[A-Z]{2,3})?$/, { message: () => "must be a language code such as en or en_US" })
  ).annotations({ description: "The template's language code (en, en_US, pt_BR)" }),
  parameters: Schema.optionalWith(
    Schema.Array(Text(1_024)).pipe(
      Schema.maxItems(MAX_TEMPLATE_PARAMETERS, {
        message: () => `may not have more than ${MAX_TEMPLATE_PARAMETERS} items`
      })
    ),
    { default: () => [] }
  ).annotations({ description: "The body's parameters in order; `{{variable}}` is replaced by the variable's value" })
}, all) {}

/** A template the provider has for the channel's account (`GET /api/user/channels/{channel}/templates`). */
export class ChannelTemplate extends Schema.Class<ChannelTemplate>("ChannelTemplate")({
  name: Schema.String,
  language: Schema.String,
  /** The provider's review status: only `APPROVED` templates can be sent. */
  status: Schema.String,
  category: Schema.NullOr(Schema.String),
  /** The body's text with its `{{1}}` placeholders, as the contact sees it. */
  body: Schema.NullOr(Schema.String),
  /** How many body parameters a send must give. */
  parameters: Schema.Int
}) {}

export { templateParameterCount, templateText } from "./TemplateText.js"
