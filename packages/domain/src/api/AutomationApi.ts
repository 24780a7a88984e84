import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  Action,
  ActionResult,
  ActionResultsQuery,
  ActionsQuery,
  CreateAction,
  CreateVariable,
  UpdateAction,
  UpdateVariable,
  Variable,
  VariablesQuery
} from "../Automation.js"
import { Ok } from "../Envelope.js"
import {
  ActionNotFoundResponse,
  PipelineNotFoundResponse,
  UnprocessableResponse,
  VariableNotFoundResponse
} from "../Errors.js"
import { ActionId, ActionIdFromString, PipelineIdFromString, VariableId, VariableIdFromString } from "../Ids.js"
import { Authorized } from "./Auth.js"

const pipelinePath = Schema.Struct({ pipeline: PipelineIdFromString })
const variablePath = Schema.Struct({ variable: VariableIdFromString })
const actionPath = Schema.Struct({ action: ActionIdFromString })

/** Variables, actions and the record of every action run (SPEC.md 4.5). Scopes as for pipelines. */
export class AutomationApi extends HttpApiGroup.make("automation")
  .add(
    HttpApiEndpoint.get("listVariables", "/api/user/pipelines/:pipeline/variables")
      .setPath(pipelinePath)
      .setUrlParams(VariablesQuery)
      .addSuccess(Ok(Schema.Array(Variable)))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "List a pipeline's variables (`q` filters by name)")
  )
  .add(
    HttpApiEndpoint.post("createVariable", "/api/user/pipelines/:pipeline/variables")
      .setPath(pipelinePath)
      .setPayload(CreateVariable)
      .addSuccess(Ok(Variable, { message: "Variable created successfully." }))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Create a variable")
      .annotate(
        OpenApi.Description,
        "`value` by `type`: `fixed` a literal; `from_system` `entity.field`; `from_action` `action_name.response.path` or " +
          "`action_name.status`; `from_ai` an extraction instruction. Scope `pipelines:write`."
      )
  )
  .add(
    HttpApiEndpoint.put("updateVariable", "/api/user/variables/:variable")
      .setPath(variablePath)
      .setPayload(UpdateVariable)
      .addSuccess(Ok(Variable, { message: "Variable updated successfully." }))
      .addError(VariableNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Update a variable (only the fields sent change)")
  )
  .add(
    HttpApiEndpoint.del("deleteVariable", "/api/user/variables/:variable")
      .setPath(variablePath)
      .addSuccess(
        Ok(Schema.Struct({ id: VariableId, deleted: Schema.Boolean }), { message: "Variable deleted successfully." })
      )
      .addError(VariableNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Delete a variable no action uses")
  )
  .add(
    HttpApiEndpoint.get("listActions", "/api/user/pipelines/:pipeline/actions")
      .setPath(pipelinePath)
      .setUrlParams(ActionsQuery)
      .addSuccess(Ok(Schema.Array(Action)))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "List a pipeline's actions, by trigger and order")
  )
  .add(
    HttpApiEndpoint.post("createAction", "/api/user/pipelines/:pipeline/actions")
      .setPath(pipelinePath)
      .setPayload(CreateAction)
      .addSuccess(Ok(Action, { message: "Action created successfully." }))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Create an action")
      .annotate(
        OpenApi.Description,
        "`url`, header values and payload strings may reference the pipeline's variables as `{{variable_name}}`; raw system " +
          "placeholders are refused. Scope `pipelines:write`."
      )
  )
  .add(
    HttpApiEndpoint.put("updateAction", "/api/user/actions/:action")
      .setPath(actionPath)
      .setPayload(UpdateAction)
      .addSuccess(Ok(Action, { message: "Action updated successfully." }))
      .addError(ActionNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(
        OpenApi.Summary,
        "Update an action; `stage_started` and `on_any_message` triggers are fixed after creation"
      )
  )
  .add(
    HttpApiEndpoint.del("deleteAction", "/api/user/actions/:action")
      .setPath(actionPath)
      .addSuccess(
        Ok(Schema.Struct({ id: ActionId, deleted: Schema.Boolean }), { message: "Action deleted successfully." })
      )
      .addError(ActionNotFoundResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Delete an action and its run history")
  )
  .add(
    HttpApiEndpoint.get("actionResults", "/api/user/pipelines/:pipeline/action-results")
      .setPath(pipelinePath)
      .setUrlParams(ActionResultsQuery)
      .addSuccess(Ok(Schema.Array(ActionResult)))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "Action runs, newest first (`limit` default 50, max 100; `offset` default 0)")
  )
  .annotate(OpenApi.Title, "Variables and actions")
  .annotate(OpenApi.Description, "Outbound webhooks fired by triggers, and the variables they are templated with.")
{}
