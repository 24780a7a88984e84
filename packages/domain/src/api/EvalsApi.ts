/**
 * Evals (docs/evals.md): a pipeline's stored cases, "save as eval case" from a real conversation, and
 * runs of cases (stored or given inline) on the pipeline's live configuration. Reading needs
 * `pipelines:read`; storing cases and starting runs (which cost the model's calls) `pipelines:write`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok } from "../Envelope.js"
import {
  ConversationNotFoundResponse,
  EvalCaseNotFoundResponse,
  EvalRunNotFoundResponse,
  ForbiddenResponse,
  PipelineNotFoundResponse,
  UnprocessableResponse
} from "../Errors.js"
import {
  EvalCase,
  EvalCaseIdFromString,
  EvalCaseSpec,
  EvalRun,
  EvalRunIdFromString,
  EvalRunSummary,
  SaveConversationAsCase,
  StartEvalRun
} from "../Evals.js"
import { PipelineIdFromString } from "../Ids.js"
import { ConversationIdFromString } from "../Opportunities.js"
import { Authorized } from "./Auth.js"

const pipelinePath = Schema.Struct({ pipeline: PipelineIdFromString })
const casePath = Schema.Struct({ case: EvalCaseIdFromString })

export class EvalsApi extends HttpApiGroup.make("evals")
  .add(
    HttpApiEndpoint.get("listCases", "/api/user/pipelines/:pipeline/eval-cases")
      .setPath(pipelinePath)
      .addSuccess(Ok(Schema.Array(EvalCase)))
      .addError(PipelineNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "List a pipeline's stored eval cases")
  )
  .add(
    HttpApiEndpoint.post("createCase", "/api/user/pipelines/:pipeline/eval-cases")
      .setPath(pipelinePath)
      .setPayload(EvalCaseSpec)
      .addSuccess(Ok(EvalCase, { status: 201, message: "Eval case created successfully." }))
      .addError(EvalCaseNotFoundResponse)
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Store an eval case")
      .annotate(
        OpenApi.Description,
        "Names are unique in the pipeline; `stage` and `expect.stage` must name one of its stages. Scope `pipelines:write`."
      )
  )
  .add(
    HttpApiEndpoint.get("getCase", "/api/user/eval-cases/:case")
      .setPath(casePath)
      .addSuccess(Ok(EvalCase))
      .addError(EvalCaseNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "Get an eval case")
  )
  .add(
    HttpApiEndpoint.put("replaceCase", "/api/user/eval-cases/:case")
      .setPath(casePath)
      .setPayload(EvalCaseSpec)
      .addSuccess(Ok(EvalCase, { message: "Eval case saved successfully." }))
      .addError(EvalCaseNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Replace an eval case")
  )
  .add(
    HttpApiEndpoint.del("deleteCase", "/api/user/eval-cases/:case")
      .setPath(casePath)
      .addSuccess(
        Ok(Schema.Struct({ id: Schema.Number, deleted: Schema.Boolean }), {
          message: "Eval case deleted successfully."
        })
      )
      .addError(EvalCaseNotFoundResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Delete an eval case (runs keep their copy)")
  )
  .add(
    HttpApiEndpoint.post("saveConversation", "/api/user/conversations/:conversation/eval-case")
      .setPath(Schema.Struct({ conversation: ConversationIdFromString }))
      .setPayload(SaveConversationAsCase)
      .addSuccess(Ok(EvalCase, { status: 201, message: "Eval case created successfully." }))
      .addError(ForbiddenResponse)
      .addError(ConversationNotFoundResponse)
      .addError(EvalCaseNotFoundResponse)
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Save a real conversation as an eval case, anonymised")
      .annotate(
        OpenApi.Description,
        "The contact's messages (e-mail addresses, phone numbers, long digit runs and the contact's name replaced), the stage its opportunity started in and its context, and what happened as expectations: the stage reached, the status, the actions fired, whether a person was asked for. Scope `pipelines:write`, and `conversations:read` to read the conversation (403 without it)."
      )
  )
  .add(
    HttpApiEndpoint.post("startRun", "/api/user/pipelines/:pipeline/eval-runs")
      .setPath(pipelinePath)
      .setPayload(StartEvalRun)
      .addSuccess(Ok(EvalRun, { status: 202, message: "Eval run started." }))
      .addError(EvalRunNotFoundResponse)
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Run eval cases on the pipeline")
      .annotate(
        OpenApi.Description,
        "Plays each case (`cases` given here, `case_ids` stored, or every stored case) in a sandboxed test conversation: replies are recorded, not delivered; actions recorded, not sent; no webhooks; the model's cost is charged as for any reply. Answers at once with the run (`status: running`); read it with `GET /api/user/eval-runs/{run}` until it is `passed` or `failed`. `version`: `live` (or `published`); `draft` arrives with pipeline versions. Scope `pipelines:write`."
      )
  )
  .add(
    HttpApiEndpoint.get("listRuns", "/api/user/pipelines/:pipeline/eval-runs")
      .setPath(pipelinePath)
      .addSuccess(Ok(Schema.Array(EvalRunSummary)))
      .addError(PipelineNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "List a pipeline's eval runs, newest first (50 at most)")
  )
  .add(
    HttpApiEndpoint.get("getRun", "/api/user/eval-runs/:run")
      .setPath(Schema.Struct({ run: EvalRunIdFromString }))
      .addSuccess(Ok(EvalRun))
      .addError(EvalRunNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(
        OpenApi.Summary,
        "Get an eval run: summary, comparison with the previous run, each case's transcript and verdicts"
      )
  )
  .annotate(OpenApi.Title, "Evals")
  .annotate(
    OpenApi.Description,
    "Scripted conversations a pipeline is tested on (docs/evals.md). Scopes `pipelines:read` and `pipelines:write`."
  )
{}
