export * from "./DeliverReply.js"
