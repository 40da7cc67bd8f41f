import { and, eq, inArray, notExists } from "drizzle-orm";
import type { Tx } from "#db/client.ts";
import { memberships, namespaceMembers, namespaces } from "#db/schema/index.ts";

/**
 * Ends the org membership of those of `userIds` left in none of the org's namespaces (after a removal or a namespace's
 * deletion), so the org no longer lists them nor counts them against its plan's users. Returns whose ended.
 */
export async function endEmptyOrgMemberships(tx: Tx, orgId: string, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const stillIn = tx
    .select({ one: namespaceMembers.userId })
    .from(namespaceMembers)
    .innerJoin(namespaces, eq(namespaces.id, namespaceMembers.namespaceId))
    .where(and(eq(namespaceMembers.userId, memberships.userId), eq(namespaces.orgId, orgId)));
  const ended = await tx
    .delete(memberships)
    .where(and(eq(memberships.orgId, orgId), inArray(memberships.userId, [...userIds]), notExists(stillIn)))
    .returning({ userId: memberships.userId });
  return ended.map((r) => r.userId);
}
