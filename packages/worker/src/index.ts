export * from "./DeliverReply.js"
export * from "./Conversation.js"
