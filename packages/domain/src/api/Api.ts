import { HttpApi, OpenApi } from "@effect/platform"
import { MalformedBodyResponse, replaceDecodeError, ValidationErrorResponse } from "../Envelope.js"
import { AccountApi } from "./AccountApi.js"
import { AiModelsApi } from "./AiModelsApi.js"
import { AnalyticsApi } from "./AnalyticsApi.js"
import { AutomationApi } from "./AutomationApi.js"
import { ChannelsApi } from "./ChannelsApi.js"
import { ConversationsApi } from "./ConversationsApi.js"
import { EvalsApi } from "./EvalsApi.js"
import { EventWebhooksApi } from "./EventWebhooksApi.js"
import { FollowupsApi } from "./FollowupsApi.js"
import { KnowledgeApi } from "./KnowledgeApi.js"
import { MessagesApi } from "./MessagesApi.js"
import { ModelPoolApi } from "./ModelPoolApi.js"
import { ContactsApi, OpportunitiesApi } from "./OpportunitiesApi.js"
import { PipelinesApi } from "./PipelinesApi.js"
import { VersionsApi } from "./VersionsApi.js"
import { WebChatApi } from "./WebChatApi.js"
import { WidgetApi } from "./WidgetApi.js"
import { WorkspacesApi } from "./WorkspacesApi.js"

const BaseApi = HttpApi.make("parley")
  .add(AccountApi)
  .add(WorkspacesApi)
  .add(PipelinesApi)
  .add(ChannelsApi)
  .add(OpportunitiesApi)
  .add(ContactsApi)
  .add(ConversationsApi)
  .add(EventWebhooksApi)
  .add(WebChatApi)
  .add(WidgetApi)
  .add(MessagesApi)
  .add(ModelPoolApi)
  .add(AnalyticsApi)
  .add(KnowledgeApi)
  .add(FollowupsApi)
  .add(AutomationApi)
  .add(EvalsApi)
  .add(VersionsApi)
  .add(AiModelsApi)
  .addError(MalformedBodyResponse)
  .annotate(OpenApi.Title, "Parley API")
  .annotate(OpenApi.Version, "0.1.0")
  .annotate(
    OpenApi.Description,
    "Conversational AI pipelines. Every `/api/user` response is the envelope `{status, code, validation, message, data}`."
  )

/** The contract: 422 envelopes naming every bad field instead of the framework's 400. */
export const Api = replaceDecodeError(BaseApi, ValidationErrorResponse)
export type Api = typeof BaseApi
