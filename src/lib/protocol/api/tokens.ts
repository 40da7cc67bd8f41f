import { type Static, Type } from "@sinclair/typebox";
import { Empty, Id } from "./common.ts";

/**
 * A token as lists show it: masked name (prefix, '...', last characters), ISO creation time, and its creator's
 * address, null once that user is deleted (the token outlives them).
 */
export const Token = Type.Object({
  tokenId: Type.String(),
  createTime: Type.String(),
  name: Type.String(),
  creatorEmail: Type.Union([Type.String(), Type.Null()]),
});
export type Token = Static<typeof Token>;

/** GenerateNamespaceToken and ListNamespaceTokens. */
export const NamespaceTokensRequest = Type.Object({ namespaceId: Id });
export type NamespaceTokensRequest = Static<typeof NamespaceTokensRequest>;
/** GenerateOrgToken and ListOrgTokens. */
export const OrgTokensRequest = Type.Object({ orgId: Id });
export type OrgTokensRequest = Static<typeof OrgTokensRequest>;
/** DeleteNamespaceToken and DeleteOrgToken. */
export const DeleteTokenRequest = Type.Object({ tokenId: Id });
export type DeleteTokenRequest = Static<typeof DeleteTokenRequest>;
export const DeleteTokenResponse = Empty;
export type DeleteTokenResponse = Static<typeof DeleteTokenResponse>;

/** The secret, shown once; lists only ever show it masked. */
export const GenerateTokenResponse = Type.Object({ token: Type.String(), tokenId: Type.String() });
export type GenerateTokenResponse = Static<typeof GenerateTokenResponse>;

/** Newest first. */
export const ListTokensResponse = Type.Object({ tokens: Type.Array(Token) });
export type ListTokensResponse = Static<typeof ListTokensResponse>;
