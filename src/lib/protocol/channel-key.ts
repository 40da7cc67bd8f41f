/**
 * A live channel's key: `ns:<namespace id>` or `link:<link id>`. The live hub keys its channels by it, ingest its
 * counts and rate limits, and the cluster's nodes name channels by it to each other (presence, interest, history
 * requests, shared limits), so it is built and read here only.
 */
export type ChannelKey = `ns:${string}` | `link:${string}`;

/** A namespace's live view, or one shared link's. Never both: that is what keeps them apart. */
export type ChannelRef = { kind: "namespace"; namespaceId: string } | { kind: "link"; linkId: string };

/** Where published events go: a namespace, a shared link, or both (a namespace's run that also shares a link). */
export type ChannelTarget = { namespaceId: string | null; linkId: string | null };

export function channelKey(ref: ChannelRef): ChannelKey {
  return ref.kind === "namespace" ? `ns:${ref.namespaceId}` : `link:${ref.linkId}`;
}

/** Every channel a target's events are shown in: its namespace's and its link's. */
export function channelKeysOf(target: ChannelTarget): ChannelKey[] {
  const keys: ChannelKey[] = [];
  if (target.namespaceId) keys.push(`ns:${target.namespaceId}`);
  if (target.linkId) keys.push(`link:${target.linkId}`);
  return keys;
}

/** The one key a target is counted and rate-limited under: its namespace's, else its link's. */
export function targetKey(target: ChannelTarget): ChannelKey {
  return target.namespaceId ? `ns:${target.namespaceId}` : `link:${target.linkId ?? ""}`;
}

/** The channel a key names; null for anything else (keys also arrive from other nodes). */
export function parseChannelKey(key: string): ChannelRef | null {
  if (key.startsWith("ns:") && key.length > 3) return { kind: "namespace", namespaceId: key.slice(3) };
  if (key.startsWith("link:") && key.length > 5) return { kind: "link", linkId: key.slice(5) };
  return null;
}

/** The target whose events a channel shows alone (a namespace's channel: that namespace, no link). */
export function targetOf(ref: ChannelRef): ChannelTarget {
  return ref.kind === "namespace" ? { namespaceId: ref.namespaceId, linkId: null } : { namespaceId: null, linkId: ref.linkId };
}

export function isLinkKey(key: string): boolean {
  return key.startsWith("link:");
}
