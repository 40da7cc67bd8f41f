import { errorMessage } from "~/lib/errors.ts";
import type { ConnectionInfo, ConnectionObserver } from "../relay/observer.ts";
import { type Peer, type TlsOutcome, TlsRelay, TlsRelayContext } from "../relay/tls-relay.ts";
import type { CertificateAuthority } from "./authority.ts";
import type { ProcessTrust } from "./process-trust.ts";

/** Why a host's later connections are not decrypted: its program refused our certificate once. */
export const HOST_PASSED_THROUGH = "host passed through after the client rejected the certificate";

export type TlsInterceptionOptions = {
  authority: CertificateAuthority;
  /** PEM roots upstream certificates are verified against: what the program itself would trust. */
  upstreamCa: string[];
  /** Each process's own trust (its exec'd environment, a JVM's store); absent: every process trusts `upstreamCa`. */
  processTrust?: ProcessTrust;
  handshakeTimeoutMs?: number;
};

/** How one process's TLS connections are relayed: verified against its roots, or passed through with a reason. */
export type ConnectionTrust = { context: TlsRelayContext } | { reason: string };

/** Relay contexts kept, one per distinct set of roots (processes with the same trust share one). */
const MAX_CONTEXTS = 64;

/**
 * Outbound TLS interception for one run: the relay context (the CA's leaves, the roots), the hosts whose program
 * rejected our certificate (passed through from then on), and the tally the run's summary line is made of.
 */
export class TlsInterception {
  private readonly relayContext: TlsRelayContext;
  private readonly contexts = new Map<string, TlsRelayContext>();
  private readonly passedHosts = new Set<string>();
  private decrypted = 0;
  /** Connections not decrypted, by reason, with the hosts (bounded) they were to. */
  private readonly notDecrypted = new Map<string, { count: number; hosts: Set<string> }>();

  constructor(private readonly options: TlsInterceptionOptions) {
    this.relayContext = this.newContext(options.upstreamCa);
  }

  private newContext(ca: string[]): TlsRelayContext {
    return new TlsRelayContext({
      ca,
      certFor: (name, alsoNames) => this.options.authority.leafFor(name, alsoNames),
      handshakeTimeoutMs: this.options.handshakeTimeoutMs,
    });
  }

  /** Process `pid`'s trust: the relay context for its roots, or why its TLS passes through. */
  trustFor(pid: number): ConnectionTrust {
    const processTrust = this.options.processTrust;
    if (!processTrust) return { context: this.relayContext };
    let profile: ReturnType<ProcessTrust["profileFor"]>;
    try {
      profile = processTrust.profileFor(pid);
    } catch (error) {
      // Never into the relay's socket handler, and never verified against roots the process may not trust.
      return { reason: `the program's trust could not be determined (${errorMessage(error)})` };
    }
    if (profile.pems === null) return { reason: profile.reason };
    let context = this.contexts.get(profile.key);
    if (!context) {
      context = profile.pems === this.options.upstreamCa ? this.relayContext : this.newContext(profile.pems);
      this.contexts.set(profile.key, context);
      if (this.contexts.size > MAX_CONTEXTS) this.contexts.delete(this.contexts.keys().next().value as string);
    }
    return { context };
  }

  /** The merged trust file to answer process `pid`'s open of `path` with, or null to let the open run. */
  answerOpen(pid: number, path: string): string | null {
    return this.options.processTrust?.answerOpen(pid, path) ?? null;
  }

  /** Whether a ClientHello for this name (or peer address) goes to the plain pipe: the program refused us before. */
  isPassedThrough(serverName: string): boolean {
    return this.passedHosts.has(serverName);
  }

  /** A relay for one program connection whose first bytes are a ClientHello, verifying against `context`'s roots. */
  relayFor(
    info: ConnectionInfo,
    observer: ConnectionObserver | null,
    peer: Peer,
    context = this.relayContext,
    onFinish?: () => void,
  ): TlsRelay {
    return new TlsRelay(context, info, observer, peer, (outcome) => this.record(outcome), onFinish);
  }

  /** A connection passed through because what its process trusts is unknown: recorded with the reason. */
  notePassedThroughFor(info: ConnectionInfo, serverName: string, reason: string): void {
    info.tlsReason = reason;
    this.count(reason, serverName);
  }

  /** A connection to a passed-through host: recorded as not decrypted, with the reason. */
  notePassedThrough(info: ConnectionInfo, serverName: string): void {
    info.tlsReason = HOST_PASSED_THROUGH;
    this.count(HOST_PASSED_THROUGH, serverName);
  }

  private record(outcome: TlsOutcome): void {
    if (outcome.kind === "decrypted") {
      this.decrypted++;
      return;
    }
    if (outcome.kind === "failed" && outcome.reason === "client rejected the certificate" && outcome.serverName) {
      this.passedHosts.add(outcome.serverName);
    }
    this.count(outcome.reason, outcome.serverName);
  }

  private count(reason: string, host: string): void {
    let entry = this.notDecrypted.get(reason);
    if (!entry) {
      entry = { count: 0, hosts: new Set() };
      this.notDecrypted.set(reason, entry);
    }
    entry.count++;
    if (host && entry.hosts.size < 20) entry.hosts.add(host);
  }

  /**
   * The run's summary, or null when no TLS connection was seen:
   * "TLS: 41 connections decrypted, 2 not decrypted (1 client rejected the certificate: pinned.example.test; ...)".
   */
  summary(): string | null {
    let missed = 0;
    for (const entry of this.notDecrypted.values()) missed += entry.count;
    if (this.decrypted === 0 && missed === 0) return null;
    const plural = (n: number) => `${n} connection${n === 1 ? "" : "s"}`;
    let line = `TLS: ${plural(this.decrypted)} decrypted`;
    if (missed > 0) {
      const reasons = [...this.notDecrypted.entries()]
        .sort((a, b) => b[1].count - a[1].count)
        .map(([reason, { count, hosts }]) => `${count} ${reason}${hosts.size > 0 ? `: ${[...hosts].join(", ")}` : ""}`);
      line += `, ${missed} not decrypted (${reasons.join("; ")})`;
    }
    return line;
  }
}
