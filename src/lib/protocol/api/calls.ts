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
import {
  DeleteTokenRequest,
  DeleteTokenResponse,
  GenerateTokenResponse,
  ListTokensResponse,
  NamespaceTokensRequest,
  OrgTokensRequest,
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

type Call = { body: TSchema; response: TSchema };

/**
 * The JSON calls (POST /api/<name>, a JSON body, a JSON answer on 200): the controllers
 * validate with these schemas, and the browser's api() takes its types from them.
 */
export const apiCalls = {
  EmailLogin: { body: EmailLoginRequest, response: EmailLoginResponse },
  FinishEmailLogin: { body: FinishEmailLoginRequest, response: FinishEmailLoginResponse },
  ListOrgs: { body: ListOrgsRequest, response: ListOrgsResponse },
  ListNamespaces: { body: ListNamespacesRequest, response: ListNamespacesResponse },
  CreateNamespace: { body: CreateNamespaceRequest, response: CreateNamespaceResponse },
  DeleteNamespace: { body: DeleteNamespaceRequest, response: DeleteNamespaceResponse },
  OnboardNewUser: { body: OnboardNewUserRequest, response: OnboardNewUserResponse },
  CreateTunnel: { body: CreateTunnelRequest, response: CreateTunnelResponse },
  ListOpenTunnels: { body: ListOpenTunnelsRequest, response: ListOpenTunnelsResponse },
  HasSeenPublisher: { body: HasSeenPublisherRequest, response: HasSeenPublisherResponse },
  GenerateNamespaceToken: { body: NamespaceTokensRequest, response: GenerateTokenResponse },
  GenerateOrgToken: { body: OrgTokensRequest, response: GenerateTokenResponse },
  GetBillingStatus: { body: GetBillingStatusRequest, response: GetBillingStatusResponse },
  GetSubscription: { body: GetSubscriptionRequest, response: GetSubscriptionResponse },
  CancelSubscription: { body: CancelSubscriptionRequest, response: CancelSubscriptionResponse },
  OpenBillingPortal: { body: OpenBillingPortalRequest, response: OpenBillingPortalResponse },
  ListNamespaceTokens: { body: NamespaceTokensRequest, response: ListTokensResponse },
  ListOrgTokens: { body: OrgTokensRequest, response: ListTokensResponse },
  DeleteNamespaceToken: { body: DeleteTokenRequest, response: DeleteTokenResponse },
  DeleteOrgToken: { body: DeleteTokenRequest, response: DeleteTokenResponse },
  ListUsers: { body: ListUsersRequest, response: ListUsersResponse },
  AddUser: { body: AddUserRequest, response: AddUserResponse },
  RemoveUser: { body: RemoveUserRequest, response: RemoveUserResponse },
  RevokeInvitation: { body: RevokeInvitationRequest, response: RevokeInvitationResponse },
  EndUserSessions: { body: EndUserSessionsRequest, response: EndUserSessionsResponse },
  ListMyInvitations: { body: ListMyInvitationsRequest, response: ListMyInvitationsResponse },
  AcceptInvitation: { body: AnswerInvitationRequest, response: AcceptInvitationResponse },
  DeclineInvitation: { body: AnswerInvitationRequest, response: DeclineInvitationResponse },
  JoinSubscriber: { body: JoinSubscriberRequest, response: JoinSubscriberResponse },
  JoinPublisher: { body: JoinPublisherRequest, response: JoinPublisherResponse },
  GetLink: { body: GetLinkRequest, response: GetLinkResponse },
  GetOtlpExport: { body: GetOtlpExportRequest, response: OtlpExportResponse },
  SaveOtlpExport: { body: SaveOtlpExportRequest, response: OtlpExportResponse },
  DeleteOtlpExport: { body: DeleteOtlpExportRequest, response: DeleteOtlpExportResponse },
  SendOtlpTestSpan: { body: SendOtlpTestSpanRequest, response: SendOtlpTestSpanResponse },
} as const satisfies Record<string, Call>;

export type ApiCallName = keyof typeof apiCalls;
export type ApiRequest<Name extends ApiCallName> = Static<(typeof apiCalls)[Name]["body"]>;
export type ApiResponse<Name extends ApiCallName> = Static<(typeof apiCalls)[Name]["response"]>;
