import { BlockList, isIP } from "node:net";

/**
 * TRUST_PROXY: comma-separated addresses and CIDR ranges of the reverse proxies in front of the server, or
 * `loopback` (127.0.0.0/8 and ::1). Returns the entries as CIDRs, or an error sentence.
 */
export function parseTrustedProxies(raw: string): { cidrs: string[] } | { error: string } {
  const cidrs: string[] = [];
  for (const part of raw.split(",")) {
    const entry = part.trim().toLowerCase();
    if (!entry) continue;
    if (entry === "loopback") {
      cidrs.push("127.0.0.0/8", "::1/128");
      continue;
    }
    const [address = "", bitsText, ...extra] = entry.split("/");
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const bits = bitsText === undefined ? maxBits : Number(bitsText);
    if (family === 0 || extra.length > 0 || !/^\d{1,3}$/.test(String(bits)) || bits > maxBits) {
      return { error: `"${part.trim()}" is not an address, a CIDR range or loopback` };
    }
    cidrs.push(`${address}/${bits}`);
  }
  return { cidrs };
}

export type TrustedProxies = { has: (address: string) => boolean };

export function trustedProxies(cidrs: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = "", bits = ""] = cidr.split("/");
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    list.addSubnet(address, Number(bits), family);
  }
  return {
    has: (address) => {
      const family = isIP(address);
      // BlockList matches an IPv4-mapped IPv6 address against IPv4 ranges too.
      return family !== 0 && list.check(address, family === 6 ? "ipv6" : "ipv4");
    },
  };
}

/** A forwarded-for chain longer than this is not looked into further (each hop is one entry). */
const MAX_HOPS = 32;

/**
 * The address a request is counted under. The socket peer, unless it is a trusted proxy: then the right-most
 * X-Forwarded-For entry that is not itself a trusted proxy (what our proxies saw), never an entry the client
 * wrote further left. An IPv6 client is counted by its /64, the block one subscriber usually holds.
 */
export function clientAddress(peer: string | null | undefined, forwardedFor: string | null, trusted: TrustedProxies): string {
  let client = normalize(peer ?? "");
  if (forwardedFor && trusted.has(client)) {
    const hops = forwardedFor.split(",").slice(-MAX_HOPS);
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalize(hops[i]!.trim());
      // A hop that is not an address means the chain is not one our proxies wrote: count the proxy itself.
      if (isIP(hop) === 0) break;
      client = hop;
      if (!trusted.has(hop)) break;
    }
  }
  return isIP(client) === 6 ? ipv6Prefix64(client) : client;
}

function normalize(address: string): string {
  const lower = address.toLowerCase();
  return lower.startsWith("::ffff:") && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower;
}

function ipv6Prefix64(address: string): string {
  const [head = "", tail] = address.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}
