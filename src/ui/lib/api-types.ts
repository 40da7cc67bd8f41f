/** The answers of spec section 7 as the browser sees them. */
export type Self = { email: string; userId: string };
export type Org = { orgId: string; lastSeenWorkerTime?: string | number | null };
export type Namespace = { namespaceId: string; name: string };
export type Token = { tokenId: string; createTime: string | number; name: string; creatorEmail: string | null };
/** Invited addresses that have not signed in yet come with isPending and no userId. */
export type NamespaceUser = { userId: string | null; email: string; joinTime: string | number; hasWrite: boolean; isPending?: boolean };

export type ListOrgsAnswer = { orgs: Org[] };
export type ListNamespacesAnswer = { namespaces: Namespace[] };
export type CreateNamespaceAnswer = { namespaceId: string };
export type OnboardNewUserAnswer = { namespace: Namespace; org: Org };
export type GenerateTokenAnswer = { token: string };
export type ListTokensAnswer = { tokens: Token[] };
export type ListUsersAnswer = { users: NamespaceUser[] };
export type EmailLoginAnswer = { error?: string };

/** What the server tells every page: which sign-in options exist, where to get help, which build runs. */
export type PublicConfig = {
  hasGoogle: boolean;
  hasGithub: boolean;
  supportEmail: string;
  commitHash: string;
};
