export * from "./DeliverReply.js"
export * from "./Conversation.js"
export * from "./agent/Models.js"
