import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok } from "../Envelope.js"
import { BadRequestResponse, ForbiddenResponse, OpportunityNotFoundResponse, UnprocessableResponse } from "../Errors.js"
import {
  Contact,
  CreateOpportunity,
  Identifier,
  ListContactsQuery,
  ListOpportunitiesQuery,
  LookupQuery,
  Opportunity,
  OpportunityOnContact,
  UpdateOpportunity
} from "../Opportunities.js"
import { Paginated } from "../Pagination.js"
import { Authorized } from "./Auth.js"
import { PageLinks } from "./PublicOrigin.js"

const identifierPath = Schema.Struct({ identifier: Identifier })

export class OpportunitiesApi extends HttpApiGroup.make("opportunities")
  .add(
    HttpApiEndpoint.post("create", "/api/user/opportunities")
      .setPayload(CreateOpportunity)
      .addSuccess(Ok(Schema.Union(Opportunity, OpportunityOnContact), { message: "Opportunity created successfully." }))
      .addError(UnprocessableResponse)
      .addError(BadRequestResponse)
      .middleware(Authorized["opportunities:write"])
      .annotate(OpenApi.Summary, "Create an opportunity (or return the contact's current one in the pipeline)")
      .annotate(
        OpenApi.Description,
        "With `contact_id` a new opportunity is always created on that contact and joins its conversation on the pipeline's channel; the answer then carries `conversation` instead of the contact fields. With `contact` the contact is matched on phone, then email, or created; if it already has an opportunity in the pipeline, the newest one is returned. 400 `Create a stage first` when the pipeline has no stages or `stage_id` belongs to another pipeline."
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/api/user/opportunities")
      .setUrlParams(ListOpportunitiesQuery)
      .addSuccess(Ok(Paginated(Opportunity)))
      .middleware(Authorized["opportunities:read"])
      .middleware(PageLinks)
      .annotate(OpenApi.Summary, "List opportunities, newest first, with the filters of list_opportunities")
  )
  .add(
    HttpApiEndpoint.get("get", "/api/user/opportunities/:identifier")
      .setPath(identifierPath)
      .setUrlParams(LookupQuery)
      .addSuccess(Ok(Opportunity))
      .addError(ForbiddenResponse)
      .addError(OpportunityNotFoundResponse)
      .middleware(Authorized["opportunities:read"])
      .annotate(OpenApi.Summary, "Retrieve by opportunity id, or by contact phone (first match wins)")
      .annotate(
        OpenApi.Description,
        "An all-digit identifier is tried as an opportunity id first, then as a contact phone (digits with country code, no `+`). `pipeline_id` narrows a phone lookup and is ignored for an id. 403 for an opportunity of another workspace."
      )
  )
  .add(
    HttpApiEndpoint.put("update", "/api/user/opportunities/:identifier")
      .setPath(identifierPath)
      .setUrlParams(LookupQuery)
      .setPayload(UpdateOpportunity)
      .addSuccess(Ok(Opportunity, { message: "Opportunity updated successfully." }))
      .addError(OpportunityNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["opportunities:write"])
      .annotate(OpenApi.Summary, "Update an opportunity; only the fields sent change")
  )
  .annotate(OpenApi.Title, "Opportunities")
{}

export class ContactsApi extends HttpApiGroup.make("contacts")
  .add(
    HttpApiEndpoint.get("list", "/api/user/contacts")
      .setUrlParams(ListContactsQuery)
      .addSuccess(Ok(Paginated(Contact)))
      .middleware(Authorized["opportunities:read"])
      .middleware(PageLinks)
      .annotate(OpenApi.Summary, "List contacts, newest first, with the filters of list_contacts")
  )
  .add(
    HttpApiEndpoint.get("opportunities", "/api/user/contacts/:identifier/opportunities")
      .setPath(identifierPath)
      .setUrlParams(LookupQuery)
      .addSuccess(Ok(Schema.Array(Opportunity)))
      .middleware(Authorized["opportunities:read"])
      .annotate(OpenApi.Summary, "A contact's opportunities, newest first; by contact id, then by phone")
      .annotate(OpenApi.Description, "Never 404: no match is an empty list.")
  )
  .annotate(OpenApi.Title, "Contacts")
{}
