/**
 * The boundary between the relay (which moves bytes) and the tracer (which parses a copy of them).
 * The relay forwards every byte first and only then hands a copy to the tap; a tap that throws or
 * falls behind is detached and the connection becomes plain passthrough.
 *
 * Times are microseconds on one clock: `(performance.timeOrigin + performance.now()) * 1000`
 * (monotonic within the process, aligned with the Unix epoch). See `nowMicros()`.
 */
export type ConnectionInfo = {
  /** Unique within the run. */
  id: number;
  /** inbound: a client connected to the program; outbound: the program connected to a peer. */
  direction: "inbound" | "outbound";
  /** "ip:port" ("[v6]:port"), as the program would see them without tracing. */
  clientAddr: string;
  serverAddr: string;
  /** The traced process that accepted or connected (0 when unknown). */
  pid: number;
  /** Outbound: when connect() was asked for; inbound: when the relay accepted the client. */
  startedAt: number;
  /** When the connection to the far side was established. */
  connectedAt: number;
  /** Set when the relay decrypted the connection: the taps then see plaintext. */
  tls?: TlsInfo;
  /** A TLS connection the relay did not decrypt: why ("mutual TLS", ...), and the error behind it when there is one. */
  tlsReason?: string;
  tlsDetail?: string;
  /**
   * A connection inside a forward proxy's CONNECT tunnel (`serverAddr` is the authority it named): the proxy's address
   * and the CONNECT's event, its exchanges' parent.
   */
  tunnel?: { proxyAddr: string; parentEventId: string };
  /** The program asked for TLS in the database protocol's own words first (PostgreSQL's SSLRequest). */
  startTls?: "postgresql";
};

export type TlsInfo = {
  serverName: string;
  /** The protocol the peer chose by ALPN ("h2", "http/1.1"), "" when none. */
  alpn: string;
  /** When the TLS handshake with the peer began and ended (after its certificate was verified). */
  handshakeStartedAt: number;
  handshakeDoneAt: number;
};

export type ConnectionTap = {
  /**
   * A copy of bytes that have already been forwarded. `fromClient` is true for bytes the client sent
   * (the request side). The chunk is never modified after the call (the relay hands over a fresh buffer per
   * read), so a tap may keep views of it instead of copies; it must not modify it.
   */
  onData(fromClient: boolean, chunk: Uint8Array, at: number): void;
  /** Half-close by one side (FIN). */
  onEnd?(fromClient: boolean, at: number): void;
  /** The connection is gone: closed, reset, or the program exited. */
  onClose(at: number, error?: string): void;
  /**
   * The relay took what follows a successful CONNECT off this connection (its bytes go to a connection of their own,
   * until onClose ends the tunnel): returns the CONNECT's event id, the tunnel's connection's parent ("" when none).
   */
  onTunnel?(at: number): string;
  /**
   * The process that accepted an inbound connection, learnt only after the connection was shown (the accept came
   * late): what follows, and exchanges still open, belong to it.
   */
  onProcess?(pid: number): void;
};

export type ConnectionObserver = {
  /** Return null to pass the connection through without observing it. */
  onOpen(info: ConnectionInfo): ConnectionTap | null;
  /**
   * Given by the supervisor: shows the observer now the inbound connections of process `pid` still held back until their
   * accept is seen, so a call the process makes on a connection it already had can name the request it serves.
   */
  setInboundRelease?(release: (pid: number) => void): void;
};

export function nowMicros(): number {
  return (performance.timeOrigin + performance.now()) * 1000;
}
