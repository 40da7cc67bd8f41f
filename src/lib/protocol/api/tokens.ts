import { type Static, Type } from "@sinclair/typebox";
import { MAX_TOKEN_LABEL } from "../token-messages.ts";
import { Empty, Id } from "./common.ts";

/**
 * A token as lists show it: masked name (prefix, '...', last characters), ISO creation time, and its creator's
 * address, null once that user is deleted (the token outlives them). `label`: what its admins named it ("" when
 * unnamed); `lastUsedTime`: when it last authenticated (ISO, to the minute), null when never.
 */
export const Token = Type.Object({
  tokenId: Type.String(),
  createTime: Type.String(),
  name: Type.String(),
  creatorEmail: Type.Union([Type.String(), Type.Null()]),
  label: Type.String(),
  lastUsedTime: Type.Union([Type.String(), Type.Null()]),
});
export type Token = Static<typeof Token>;

/** A token's name: at most 64 characters, no control characters (the verbs check those and trim). */
export const TokenLabel = Type.String({ maxLength: MAX_TOKEN_LABEL });

/** ListNamespaceTokens. */
export const NamespaceTokensRequest = Type.Object({ namespaceId: Id });
export type NamespaceTokensRequest = Static<typeof NamespaceTokensRequest>;
/** ListOrgTokens. */
export const OrgTokensRequest = Type.Object({ orgId: Id });
export type OrgTokensRequest = Static<typeof OrgTokensRequest>;
/** GenerateNamespaceToken: a name for it is optional. */
export const GenerateNamespaceTokenRequest = Type.Object({ namespaceId: Id, label: Type.Optional(TokenLabel) });
export type GenerateNamespaceTokenRequest = Static<typeof GenerateNamespaceTokenRequest>;
/** GenerateOrgToken. */
export const GenerateOrgTokenRequest = Type.Object({ orgId: Id, label: Type.Optional(TokenLabel) });
export type GenerateOrgTokenRequest = Static<typeof GenerateOrgTokenRequest>;
/** RenameNamespaceToken and RenameOrgToken: "" unnames it. */
export const RenameTokenRequest = Type.Object({ tokenId: Id, label: TokenLabel });
export type RenameTokenRequest = Static<typeof RenameTokenRequest>;
export const RenameTokenResponse = Empty;
export type RenameTokenResponse = Static<typeof RenameTokenResponse>;
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
