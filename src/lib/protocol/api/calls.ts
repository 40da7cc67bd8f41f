import type { Static, TSchema } from "@sinclair/typebox";
import { EmailLoginRequest, EmailLoginResponse, FinishEmailLoginRequest, FinishEmailLoginResponse } from "./auth.ts";
import {
  CancelSubscriptionRequest,
  CancelSubscriptionResponse,
  GetBillingStatusRequest,
  GetBillingStatusResponse,
  GetSubscriptionRequest,
  GetSubscriptionResponse,
  OpenBillingPortalRequest,
  OpenBillingPortalResponse,
} from "./billing.ts";
import { anyone, anyPrincipal, type Callers, signedInUser } from "./callers.ts";
import {
  DeleteAlertRuleRequest,
  DeleteAlertRuleResponse,
  GetRoutePatternsRequest,
  ListAlertsRequest,
  ListAlertsResponse,
  RoutePatternsResponse,
  SaveAlertRuleRequest,
  SaveAlertRuleResponse,
  SetRoutePatternsRequest,
} from "./endpoints.ts";
import {
  GetLinkRequest,
  GetLinkResponse,
  HasSeenPublisherRequest,
  HasSeenPublisherResponse,
  JoinSubscriberRequest,
  JoinSubscriberResponse,
} from "./live.ts";
import {
  CreateNamespaceRequest,
  CreateNamespaceResponse,
  DeleteNamespaceRequest,
  DeleteNamespaceResponse,
  ListNamespacesRequest,
  ListNamespacesResponse,
  ListOrgsRequest,
  ListOrgsResponse,
  OnboardNewUserRequest,
  OnboardNewUserResponse,
} from "./orgs.ts";
import {
  DeleteOtlpExportRequest,
  DeleteOtlpExportResponse,
  GetOtlpExportRequest,
  OtlpExportResponse,
  SaveOtlpExportRequest,
  SendOtlpTestSpanRequest,
  SendOtlpTestSpanResponse,
} from "./otlp.ts";
import { JoinPublisherRequest, JoinPublisherResponse } from "./publish.ts";
import { GetReplayAvailabilityRequest, GetReplayAvailabilityResponse, ResendRequestRequest, ResendRequestResponse } from "./replay.ts";
import {
  DeleteTokenRequest,
  DeleteTokenResponse,
  GenerateNamespaceTokenRequest,
  GenerateOrgTokenRequest,
  GenerateTokenResponse,
  ListTokensResponse,
  NamespaceTokensRequest,
  OrgTokensRequest,
  RenameTokenRequest,
  RenameTokenResponse,
} from "./tokens.ts";
import { CreateTunnelRequest, CreateTunnelResponse, ListOpenTunnelsRequest, ListOpenTunnelsResponse } from "./tunnel.ts";
import {
  AcceptInvitationResponse,
  AddUserRequest,
  AddUserResponse,
  AnswerInvitationRequest,
  DeclineInvitationResponse,
  EndUserSessionsRequest,
  EndUserSessionsResponse,
  ListMyInvitationsRequest,
  ListMyInvitationsResponse,
  ListUsersRequest,
  ListUsersResponse,
  RemoveUserRequest,
  RemoveUserResponse,
  RevokeInvitationRequest,
  RevokeInvitationResponse,
} from "./users.ts";

type Call = {
  body: TSchema;
  response: TSchema;
  /** Who may make the call (callers.ts); anyone else is answered 401 or 403 before the body is read (ADR 0028). */
  callers: Callers;
  /** Only our own pages may make it: the Origin must be ours even without a session (a sign-in is a write). */
  isSameOriginOnly?: true;
};

/**
 * The JSON calls (POST /api/<name>, a JSON body, a JSON answer on 200): the controllers
 * validate with these schemas, src/api/call-schemas.ts admits only the declared callers, and the browser's api() takes
 * its types from them.
 */
export const apiCalls = {
  EmailLogin: { body: EmailLoginRequest, response: EmailLoginResponse, callers: anyone },
  FinishEmailLogin: { body: FinishEmailLoginRequest, response: FinishEmailLoginResponse, callers: anyone, isSameOriginOnly: true },
  ListOrgs: { body: ListOrgsRequest, response: ListOrgsResponse, callers: signedInUser },
  ListNamespaces: { body: ListNamespacesRequest, response: ListNamespacesResponse, callers: anyPrincipal },
  CreateNamespace: { body: CreateNamespaceRequest, response: CreateNamespaceResponse, callers: signedInUser },
  DeleteNamespace: { body: DeleteNamespaceRequest, response: DeleteNamespaceResponse, callers: signedInUser },
  OnboardNewUser: { body: OnboardNewUserRequest, response: OnboardNewUserResponse, callers: signedInUser },
  CreateTunnel: { body: CreateTunnelRequest, response: CreateTunnelResponse, callers: anyPrincipal },
  ListOpenTunnels: { body: ListOpenTunnelsRequest, response: ListOpenTunnelsResponse, callers: anyPrincipal },
  HasSeenPublisher: { body: HasSeenPublisherRequest, response: HasSeenPublisherResponse, callers: signedInUser },
  GenerateNamespaceToken: { body: GenerateNamespaceTokenRequest, response: GenerateTokenResponse, callers: signedInUser },
  GenerateOrgToken: { body: GenerateOrgTokenRequest, response: GenerateTokenResponse, callers: signedInUser },
  GetBillingStatus: { body: GetBillingStatusRequest, response: GetBillingStatusResponse, callers: anyPrincipal },
  GetSubscription: { body: GetSubscriptionRequest, response: GetSubscriptionResponse, callers: anyPrincipal },
  CancelSubscription: { body: CancelSubscriptionRequest, response: CancelSubscriptionResponse, callers: signedInUser },
  OpenBillingPortal: { body: OpenBillingPortalRequest, response: OpenBillingPortalResponse, callers: signedInUser },
  ListNamespaceTokens: { body: NamespaceTokensRequest, response: ListTokensResponse, callers: signedInUser },
  ListOrgTokens: { body: OrgTokensRequest, response: ListTokensResponse, callers: signedInUser },
  DeleteNamespaceToken: { body: DeleteTokenRequest, response: DeleteTokenResponse, callers: signedInUser },
  DeleteOrgToken: { body: DeleteTokenRequest, response: DeleteTokenResponse, callers: signedInUser },
  RenameNamespaceToken: { body: RenameTokenRequest, response: RenameTokenResponse, callers: signedInUser },
  RenameOrgToken: { body: RenameTokenRequest, response: RenameTokenResponse, callers: signedInUser },
  ListUsers: { body: ListUsersRequest, response: ListUsersResponse, callers: signedInUser },
  AddUser: { body: AddUserRequest, response: AddUserResponse, callers: signedInUser },
  RemoveUser: { body: RemoveUserRequest, response: RemoveUserResponse, callers: signedInUser },
  RevokeInvitation: { body: RevokeInvitationRequest, response: RevokeInvitationResponse, callers: signedInUser },
  EndUserSessions: { body: EndUserSessionsRequest, response: EndUserSessionsResponse, callers: signedInUser },
  ListMyInvitations: { body: ListMyInvitationsRequest, response: ListMyInvitationsResponse, callers: signedInUser },
  AcceptInvitation: { body: AnswerInvitationRequest, response: AcceptInvitationResponse, callers: signedInUser },
  DeclineInvitation: { body: AnswerInvitationRequest, response: DeclineInvitationResponse, callers: signedInUser },
  JoinSubscriber: { body: JoinSubscriberRequest, response: JoinSubscriberResponse, callers: ["user", "namespaceToken"] },
  JoinPublisher: { body: JoinPublisherRequest, response: JoinPublisherResponse, callers: ["anonymous", "namespaceToken"] },
  GetLink: { body: GetLinkRequest, response: GetLinkResponse, callers: anyone },
  GetOtlpExport: { body: GetOtlpExportRequest, response: OtlpExportResponse, callers: signedInUser },
  SaveOtlpExport: { body: SaveOtlpExportRequest, response: OtlpExportResponse, callers: signedInUser },
  DeleteOtlpExport: { body: DeleteOtlpExportRequest, response: DeleteOtlpExportResponse, callers: signedInUser },
  SendOtlpTestSpan: { body: SendOtlpTestSpanRequest, response: SendOtlpTestSpanResponse, callers: signedInUser },
  GetReplayAvailability: { body: GetReplayAvailabilityRequest, response: GetReplayAvailabilityResponse, callers: signedInUser },
  ResendRequest: { body: ResendRequestRequest, response: ResendRequestResponse, callers: signedInUser },
  GetRoutePatterns: { body: GetRoutePatternsRequest, response: RoutePatternsResponse, callers: signedInUser },
  SetRoutePatterns: { body: SetRoutePatternsRequest, response: RoutePatternsResponse, callers: signedInUser },
  ListAlerts: { body: ListAlertsRequest, response: ListAlertsResponse, callers: signedInUser },
  SaveAlertRule: { body: SaveAlertRuleRequest, response: SaveAlertRuleResponse, callers: signedInUser },
  DeleteAlertRule: { body: DeleteAlertRuleRequest, response: DeleteAlertRuleResponse, callers: signedInUser },
} as const satisfies Record<string, Call>;

export type ApiCallName = keyof typeof apiCalls;
export type ApiRequest<Name extends ApiCallName> = Static<(typeof apiCalls)[Name]["body"]>;
export type ApiResponse<Name extends ApiCallName> = Static<(typeof apiCalls)[Name]["response"]>;
/** The kinds of caller a call admits. */
export type ApiCallers<Name extends ApiCallName> = (typeof apiCalls)[Name]["callers"][number];
