import { createHmac } from "node:crypto";
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { randomId } from "~/lib/server/ids.ts";

/**
 * Alert webhooks: a JSON body POSTed with `x-tapscope-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`
 * under the rule's secret, so a receiver can check it came from this server and is recent (docs/site/endpoints.md).
 */

export const signatureHeader = "x-tapscope-signature";

/** What the rule's secret is sealed for (lib/server/sealed.ts). */
export const webhookSecretPurpose = "alert webhook";

export function newWebhookSecret(): string {
  return `whsec_${randomId(24)}`;
}

export function signWebhook(secret: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", secret).update(`${timestampSeconds}.${body}`).digest("hex");
  return `t=${timestampSeconds},v1=${mac}`;
}

/** Why a webhook URL is refused as written (scheme, credentials, size), or null. */
export function webhookUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "the webhook URL is not a URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "the webhook URL must be http:// or https://";
  if (url.username || url.password) return "the webhook URL must not carry credentials (put a token in its path or query)";
  return null;
}

const privateRanges = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["224.0.0.0", 3],
] as const)
  privateRanges.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  privateRanges.addSubnet(net, prefix, "ipv6");

function isPrivate(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  const mapped = address.toLowerCase().startsWith("::ffff:") ? address.slice(7) : null;
  if (mapped && isIP(mapped) === 4) return privateRanges.check(mapped, "ipv4");
  return privateRanges.check(address, family === 6 ? "ipv6" : "ipv4");
}

/**
 * Why the URL's host may not be reached from the server (one of its addresses is loopback, private, link-local or
 * multicast), or null: a rule's admin must not make the server call into its own network. The send resolves again,
 * so a name that changes its answer in between is the residual risk a proxy of the operator's would close.
 */
export async function webhookAddressProblem(raw: string): Promise<string | null> {
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return `the webhook host ${host} does not resolve`;
  }
  const blocked = addresses.find(isPrivate);
  return blocked ? `the webhook host ${host} is a private address (${blocked}); WEBHOOKS_TO_PRIVATE_ADDRESSES=1 allows it` : null;
}
