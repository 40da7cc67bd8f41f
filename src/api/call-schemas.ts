import { type Context, Elysia } from "elysia";
import { type ApiCallers, type ApiCallName, type ApiRequest, type ApiResponse, apiCalls } from "~/lib/protocol/api/calls.ts";
import type { PrincipalOf } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { authPlugin } from "./plugins/auth.ts";

/** What a call's handler is given: the validated body and a principal of the kinds the call declares. */
type CallContext<Name extends ApiCallName> = {
  body: ApiRequest<Name>;
  principal: PrincipalOf<ApiCallers<Name>>;
  request: Request;
  set: Context["set"];
  cookie: Context["cookie"];
  server: Context["server"];
};

type CallHandler<Name extends ApiCallName> = (c: CallContext<Name>) => ApiResponse<Name> | Promise<ApiResponse<Name>>;

/**
 * POST /api/<name> as lib/protocol/api/calls.ts declares it: its callers admitted by authPlugin before the body is
 * read (anyone else: 401 or 403), its body and its 200 answer validated with the table's schemas. The handler calls
 * the verb, whose access check (require*Access) is its first line. Use: `new Elysia().use(apiCall(ctx, "ListOrgs", ...))`.
 */
export function apiCall<const Name extends ApiCallName>(ctx: ServiceContext, name: Name, handle: CallHandler<Name>) {
  const call = apiCalls[name];
  const isSameOriginOnly = "isSameOriginOnly" in call && call.isSameOriginOnly;
  return new Elysia().use(authPlugin(ctx, { callers: call.callers, what: name, isSameOriginOnly })).post(
    `/api/${name}`,
    // The plugin admitted only the declared kinds, and Elysia validated the body with the call's schema.
    ({ body, principal, request, set, cookie, server }) => handle({ body, principal, request, set, cookie, server } as CallContext<Name>),
    { body: call.body, response: { 200: call.response } },
  );
}
