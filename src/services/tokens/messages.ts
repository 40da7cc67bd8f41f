/** The 403 texts of spec section 8, shown by the Tokens screen's modal. */
export const tokenForbidden = {
  generateNamespace: "You do not have permissions to generate a token in this namespace.",
  deleteNamespace: "You do not have permissions to delete a token in this namespace.",
  generateOrg: "You do not have permissions to generate a token in this org.",
  deleteOrg: "You do not have permissions to delete a token in this org.",
} as const;

export type TokenSummary = { tokenId: string; createTime: string; name: string; creatorEmail: string };
