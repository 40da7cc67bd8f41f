import { AppError } from "~/lib/errors.ts";
import { ClientRateLimit, type RateLimit } from "~/lib/rate-limit.ts";
import { clientAddress, type TrustedProxies, trustedProxies } from "~/lib/server/client-address.ts";
import type { Config } from "~/lib/server/env.ts";

const perMinute = (n: number): RateLimit => ({ ratePerSecond: n / 60, burst: n });
const perHour = (n: number): RateLimit => ({ ratePerSecond: n / 3600, burst: n });
const perDay = (n: number): RateLimit => ({ ratePerSecond: n / 86_400, burst: n });

/**
 * What an unauthenticated client may ask of the server, per client address and for all clients together (the
 * global budget bounds a flood from many addresses), and the invitation mails a user or an org may send. Humans never
 * come near these; scripts do.
 */
export const clientLimits = {
  /** /api/Event and /api/LogEvent: a page reports a handful of events. */
  telemetry: { perClient: { ratePerSecond: 10, burst: 30 }, global: { ratePerSecond: 100, burst: 300 } },
  /** EmailLogin sends an e-mail (each address has its own limit too: requestLoginLink). */
  emailLogin: { perClient: perMinute(5), global: perMinute(60) },
  /** The e-mail link's callback and the OAuth redirects and callbacks. */
  signIn: { perClient: perMinute(30), global: { ratePerSecond: 20, burst: 200 } },
  /** New anonymous links (JoinPublisher without a token): ANONYMOUS_LINKS_PER_HOUR per client, ten times that in all. */
  anonymousLinks: (perClientPerHour: number) => ({ perClient: perHour(perClientPerHour), global: perHour(perClientPerHour * 10) }),
  /**
   * Bytes of reports stored (event_log): a day's share of EVENT_LOG_MAX_BYTES per client (at least 64 KiB, a few
   * dozen of the largest reports), and four times the budget a day in all, so the table turns over at most that often.
   */
  telemetryBytes: (maxBytes: number) => ({
    perClient: perDay(Math.max(64 * 1024, Math.floor(maxBytes / 256))),
    global: perDay(maxBytes * 4),
  }),
  /** Invitation mails (AddUser), by the inviting user: a team's worth at once, then a few an hour. */
  invitations: { perClient: perHour(20), global: perHour(1000) },
  /** Invitation mails by org, whichever of its admins sends them. */
  orgInvitations: { perClient: perHour(50), global: perHour(1000) },
  /** "Send a test span", by namespace: each is a request to an address an admin chose. */
  otlpTestSpans: { perClient: perMinute(20), global: perMinute(600) },
  /** Resent requests (Resend), by user: each is a request a run sends to the program or the host it called. */
  replays: { perClient: perMinute(30), global: perMinute(600) },
  /** MCP requests, by token: an agent's tool calls, each a store query at most. */
  mcp: { perClient: { ratePerSecond: 5, burst: 60 }, global: { ratePerSecond: 200, burst: 1000 } },
};

export type ClientLimitKind =
  | "telemetry"
  | "telemetryBytes"
  | "emailLogin"
  | "signIn"
  | "anonymousLinks"
  | "invitations"
  | "orgInvitations"
  | "otlpTestSpans"
  | "replays"
  | "mcp";

export type PeerServer = { requestIP: (request: Request) => { address: string } | null } | null | undefined;

export type ClientLimitsDeps = {
  config: Pick<Config, "trustProxy" | "anonymousLinksPerHour"> & Partial<Pick<Config, "eventLogMaxBytes">>;
  now?: () => Date;
  /** The socket peer of a request; default Bun's server.requestIP (tests calling app.handle, which has no socket, give theirs). */
  peerAddress?: (request: Request) => string | undefined;
  /** This server is a node of a cluster: what each limiter admits is recorded for the other nodes (ClusterNode). */
  isShared?: boolean;
};

export class ClientLimits {
  private readonly trusted: TrustedProxies;
  private readonly limits: Record<ClientLimitKind, ClientRateLimit>;

  constructor(private readonly deps: ClientLimitsDeps) {
    this.trusted = trustedProxies(deps.config.trustProxy);
    const clock = deps.now ?? (() => new Date());
    const now = () => clock().getTime();
    const shared = deps.isShared === true;
    this.limits = {
      telemetry: new ClientRateLimit(clientLimits.telemetry, now, shared),
      telemetryBytes: new ClientRateLimit(clientLimits.telemetryBytes(deps.config.eventLogMaxBytes ?? 64 * 1024 ** 2), now, shared),
      emailLogin: new ClientRateLimit(clientLimits.emailLogin, now, shared),
      signIn: new ClientRateLimit(clientLimits.signIn, now, shared),
      anonymousLinks: new ClientRateLimit(clientLimits.anonymousLinks(deps.config.anonymousLinksPerHour), now, shared),
      invitations: new ClientRateLimit(clientLimits.invitations, now, shared),
      orgInvitations: new ClientRateLimit(clientLimits.orgInvitations, now, shared),
      otlpTestSpans: new ClientRateLimit(clientLimits.otlpTestSpans, now, shared),
      replays: new ClientRateLimit(clientLimits.replays, now, shared),
      mcp: new ClientRateLimit(clientLimits.mcp, now, shared),
    };
  }

  /** The address a request is counted under (TRUST_PROXY decides whether X-Forwarded-For is believed). */
  addressOf(request: Request, server: PeerServer): string {
    const peer = this.deps.peerAddress ? this.deps.peerAddress(request) : server?.requestIP(request)?.address;
    return clientAddress(peer, request.headers.get("x-forwarded-for"), this.trusted);
  }

  /** Each kind's limiter (a cluster node shares what they admit with the other nodes, when isShared). */
  get all(): Readonly<Record<ClientLimitKind, ClientRateLimit>> {
    return this.limits;
  }

  /** Counts one request (or `n` bytes) of `kind` from `address`; over the budget: RATE_LIMITED (429 with Retry-After). */
  admit(kind: ClientLimitKind, address: string, message = "too many requests from this address; try again later", n = 1): void {
    const waitMs = this.limits[kind].admit(address, n);
    if (waitMs > 0) throw new AppError("RATE_LIMITED", message, { retryAfterMs: waitMs });
  }

  /** Counts one under every (kind, key) given, or none of them when any is over its budget (RATE_LIMITED). */
  admitAll(entries: ReadonlyArray<readonly [ClientLimitKind, string]>, message: string): void {
    const waitMs = Math.max(0, ...entries.map(([kind, key]) => this.limits[kind].waitMs(key)));
    if (waitMs > 0) throw new AppError("RATE_LIMITED", message, { retryAfterMs: waitMs });
    for (const [kind, key] of entries) this.limits[kind].admit(key);
  }
}
