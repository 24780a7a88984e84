/**
 * The message templates every simulated WhatsApp channel's account has (docs/channels.md, "Try it without an
 * account"): listed as Meta lists an account's templates, and checked on a template send as Meta checks it.
 */
import { templateParameterCount, templateText } from "@parley/domain"

interface SimulatedTemplate {
  readonly id: string
  readonly name: string
  readonly language: string
  readonly status: "APPROVED" | "PENDING"
  readonly category: "UTILITY" | "MARKETING"
  readonly body: string
}

export const SIMULATED_TEMPLATES: ReadonlyArray<SimulatedTemplate> = [
  {
    id: "9001",
    name: "hello_world",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    body:
      "Welcome and congratulations!! This message demonstrates your ability to send a WhatsApp message notification."
  },
  {
    id: "9002",
    name: "checking_in",
    language: "en",
    status: "APPROVED",
    category: "UTILITY",
    body: "Hi {{1}}, just checking in: is there anything else I can help you with?"
  },
  {
    id: "9003",
    name: "we_are_on_it",
    language: "en",
    status: "APPROVED",
    category: "UTILITY",
    body: "Thanks for waiting, {{1}}. A member of our team will answer you here shortly."
  },
  {
    id: "9004",
    name: "summer_sale",
    language: "en",
    status: "PENDING",
    category: "MARKETING",
    body: "Our summer sale starts today, {{1}}!"
  }
]

/** `GET /{account}/message_templates` as Meta answers it (one page). */
export const templateListing = () => ({
  data: SIMULATED_TEMPLATES.map((t) => ({
    id: t.id,
    name: t.name,
    language: t.language,
    status: t.status,
    category: t.category,
    components: [{ type: "BODY", text: t.body }]
  })),
  paging: { cursors: { before: SIMULATED_TEMPLATES[0]!.id, after: SIMULATED_TEMPLATES.at(-1)!.id } }
})

/** A template send's text as the phone shows it, or Meta's refusal (132001 unknown, 132000 parameter count). */
export const templateSent = (
  template: any
): { readonly text: string } | { readonly code: number; readonly message: string; readonly details: string } => {
  const found = SIMULATED_TEMPLATES.find((t) =>
    t.name === template?.name && t.language === template?.language?.code && t.status === "APPROVED"
  )
  if (found === undefined) {
    return {
      code: 132001,
      message: "Template name does not exist in the translation",
      details: `template name (${String(template?.name)}) does not exist in ${String(template?.language?.code)}`
    }
  }
  const given: ReadonlyArray<string> = (template.components?.find((c: any) => c?.type === "body")?.parameters ?? [])
    .map((p: any) => String(p?.text ?? ""))
  const wanted = templateParameterCount(found.body)
  if (given.length !== wanted) {
    return {
      code: 132000,
      message: "Number of parameters does not match the expected number of params",
      details: `body: number of localizable_params (${given.length}) does not match the expected number (${wanted})`
    }
  }
  return { text: templateText({ name: found.name, parameters: given }, found.body) }
}
