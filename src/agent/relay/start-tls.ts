import type { Socket } from "bun";
import type { LegData, LegOwner, Pipe, Side } from "./pipe.ts";

/**
 * Protocols that ask for TLS in plaintext before the ClientHello. PostgreSQL: the client's SSLRequest (8 bytes), the
 * server's one-byte answer (`S`: TLS follows, client first; `N`: plaintext goes on). The TLS gate answers nothing
 * itself: it forwards both, then reads what comes next as any TLS client's first bytes. A connection passed through
 * after such a start is dialed again and given the same start (the `Preamble`) before the ClientHello is replayed, so
 * the server sees what it saw the first time and the program what it already got.
 */
export const PG_SSL_REQUEST = Uint8Array.of(0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f);
/** The server's answer to an SSLRequest that accepts TLS. */
export const PG_TLS_ACCEPTED = 0x53;

/** What a fresh connection to the peer is sent, and how many answer bytes it swallows, before a ClientHello replay. */
export type Preamble = { send: Uint8Array; answerBytes: number; expect: number };

export const pgPreamble: Preamble = { send: PG_SSL_REQUEST, answerBytes: 1, expect: PG_TLS_ACCEPTED };

/** Whether the first `length` bytes are a PostgreSQL SSLRequest: 0 no, 1 not yet known, 2 yes. */
export function pgSslRequest(bytes: Uint8Array, length: number): 0 | 1 | 2 {
  const n = Math.min(length, PG_SSL_REQUEST.length);
  for (let i = 0; i < n; i++) if (bytes[i] !== PG_SSL_REQUEST[i]) return 0;
  return length >= PG_SSL_REQUEST.length ? 2 : 1;
}

/**
 * The server leg of a passed-through connection while its preamble runs: sends the preamble, takes the answer, and
 * hands the socket to the pipe; an answer other than the first connection's resets the program's connection (it is
 * already speaking TLS and could not be answered honestly).
 */
export class PreambleLeg implements LegOwner {
  private got = 0;

  constructor(
    private readonly pipe: Pipe,
    private readonly socket: Socket<LegData>,
    private readonly preamble: Preamble,
  ) {
    socket.data = { pipe: this, side: "server" };
    socket.write(preamble.send);
  }

  onData(_from: Side, chunk: Uint8Array): void {
    const take = Math.min(chunk.length, this.preamble.answerBytes - this.got);
    if (this.got === 0 && take > 0 && chunk[0] !== this.preamble.expect) {
      this.socket.terminate();
      this.pipe.fail("the server answered the TLS request differently the second time");
      return;
    }
    this.got += take;
    if (this.got < this.preamble.answerBytes) return;
    this.pipe.attach("server", this.socket);
    if (take < chunk.length) this.pipe.onData("server", chunk.subarray(take));
  }

  onDrain(): void {}

  onEnd(): void {
    this.socket.terminate();
    this.pipe.fail("the server closed during the TLS request");
  }

  onSocketClosed(): void {
    this.pipe.fail("the server closed during the TLS request");
  }
}
