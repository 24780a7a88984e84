/** A provider channel's webhook on the receiver: `/channels/{webhook_key}/webhook` (Webhook.ts). */
export const WEBHOOK_ROUTE = "/channels/:key/webhook"

export const isWebhookPath = (path: string) => /^\/channels\/[^/]+\/webhook$/.test(path)
