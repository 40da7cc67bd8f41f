import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../../support/tunnel-server.ts";

/**
 * Issue 28, Medium 5: twelve concurrent DownloadHar calls by one read-only member took the server from 0.68 to
 * 3.35 GB. Exports now take places (two running per caller, four in all on a 1 GiB server, two more waiting per
 * caller, then 429), and an export fetches its next page only as its reader takes the last.
 */
const EVENTS = 40;

/** A POST /api/DownloadHar on a raw socket that can stop reading (a client that never takes what it asked for). */
class RawExport {
  private data = Buffer.alloc(0);
  private isPausing = false;
  readonly ended: Promise<void>;
  constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.data = Buffer.concat([this.data, chunk]);
      if (this.isPausing && this.status() !== null) socket.pause();
    });
    this.ended = new Promise((resolve) => socket.on("close", () => resolve()));
  }

  static start(port: number, cookie: string, body: unknown): RawExport {
    const socket = connect(port, "127.0.0.1");
    const text = JSON.stringify(body);
    socket.write(
      `POST /api/DownloadHar HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: http://127.0.0.1:${port}\r\nCookie: ${cookie}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
    return new RawExport(socket);
  }

  /** The status of the answer once its head arrived; null while none has. */
  status(): number | null {
    const m = /^HTTP\/1\.1 (\d{3})/.exec(this.data.subarray(0, 20).toString());
    return m ? Number(m[1]) : null;
  }

  head(): string {
    const end = this.data.indexOf("\r\n\r\n");
    return end < 0 ? "" : this.data.subarray(0, end).toString();
  }

  /** The body, de-chunked (once the whole answer is in). */
  body(): string {
    const end = this.data.indexOf("\r\n\r\n");
    let rest = this.data.subarray(end + 4);
    if (!/transfer-encoding: chunked/i.test(this.head())) return rest.toString();
    const parts: Buffer[] = [];
    for (;;) {
      const line = rest.indexOf("\r\n");
      const size = Number.parseInt(rest.subarray(0, line).toString(), 16);
      if (!size) break;
      parts.push(rest.subarray(line + 2, line + 2 + size));
      rest = rest.subarray(line + 2 + size + 2);
    }
    return Buffer.concat(parts).toString();
  }

  /** Stops reading once the answer's head is in. */
  pause(): void {
    this.isPausing = true;
  }

  resume(): void {
    this.isPausing = false;
    this.socket.resume();
  }

  close(): void {
    this.socket.destroy();
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

describe("HAR exports take places and follow their reader", () => {
  let s: TunnelServer;
  let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  /** Pages fetched per export, told apart by the upper end of the range each export asks for. */
  const pagesOf = new Map<number, number>();

  beforeAll(async () => {
    s = await startTunnelServer({ env: { MEMORY_LIMIT: "1GiB" } });
    owner = await s.onboardedUser();
    const now = Date.now();
    // Random bytes: 512 KiB bodies, two to a page of the export.
    await s.ingest(
      owner.namespaceId,
      Array.from({ length: EVENTS }, (_, i) =>
        makeEvent({
          time: (now - 60_000 + i) * 1000,
          http_req_path: `/e/${i}`,
          http_resp_body: randomBytes(512 * 1024).toString("base64"),
          http_resp_body_size_bytes_wire: 512 * 1024,
        }),
      ),
    );
    const dispatch = s.workers.dispatch.bind(s.workers);
    s.workers.dispatch = (input) => {
      const want = input.request.want;
      if (want.kind === "events") {
        const upper = want.range?.upperMs ?? 0;
        pagesOf.set(upper, (pagesOf.get(upper) ?? 0) + 1);
      }
      return dispatch(input);
    };
  }, 60_000);
  afterAll(() => s?.close());

  const exportOf = (user: { cookie: string; namespaceId: string }, upperMs = Date.now() + 60_000) =>
    RawExport.start(s.port, user.cookie, {
      namespaceId: user.namespaceId,
      filter: { clauses: [], global: { lowerMs: Date.now() - 3_600_000, upperMs } },
    });

  test("two run per caller, two more wait their turn, the next is told to come back; places in all are shared", async () => {
    const other = await s.onboardedUser();
    const third = await s.onboardedUser();
    for (const user of [other, third]) {
      const now = Date.now();
      const body = randomBytes(512 * 1024).toString("base64");
      await s.ingest(
        user.namespaceId,
        Array.from({ length: 10 }, (_, i) =>
          makeEvent({ time: (now - 1000 + i) * 1000, http_resp_body: body, http_resp_body_size_bytes_wire: 512 * 1024 }),
        ),
      );
    }
    const mine = Array.from({ length: 4 }, () => exportOf(owner));
    for (const e of mine) e.pause();
    await until(() => mine.filter((e) => e.status() === 200).length === 2, "two of mine running");
    const refused = exportOf(owner);
    await until(() => refused.status() !== null, "the fifth answered");
    expect(refused.status()).toBe(429);
    expect(refused.head()).toMatch(/retry-after: \d+/i);
    await refused.ended;
    expect(refused.body()).toContain("too many HAR exports at once");
    // Another caller has its own two places: four in all are taken now, so a third caller waits.
    const theirs = [exportOf(other), exportOf(other)];
    for (const e of theirs) e.pause();
    await until(() => theirs.every((e) => e.status() === 200), "the other caller's two");
    const waiting = exportOf(third);
    await Bun.sleep(500);
    expect(waiting.status()).toBeNull();
    expect(mine.filter((e) => e.status() === null)).toHaveLength(2);

    // A reader that goes away gives its place back: the first in line (mine, then the third caller) goes next.
    mine.find((e) => e.status() === 200)!.close();
    await until(() => mine.filter((e) => e.status() === 200).length === 3, "my third export running");
    expect(waiting.status()).toBeNull();
    theirs[0]!.close();
    await until(() => waiting.status() === 200, "the third caller's export running");
    for (const e of [...mine, ...theirs, waiting]) e.close();
  }, 60_000);

  test("a reader that stops reading stops the export fetching pages; when it reads again the whole HAR comes", async () => {
    // Only this export's pages count (the exports the test above closed may still finish one on a busy machine).
    const upperMs = Date.now() + 120_000;
    const pages = () => pagesOf.get(upperMs) ?? 0;
    const slow = exportOf(owner, upperMs);
    slow.pause();
    await until(() => slow.status() === 200, "the export started");
    await Bun.sleep(1500);
    // 20 pages of about 1.4 MB of text: what the socket's buffers take is a few of them.
    expect(pages()).toBeLessThanOrEqual(10);
    slow.resume();
    await slow.ended;
    const har = JSON.parse(slow.body()) as { log: { entries: unknown[] } };
    expect(har.log.entries).toHaveLength(EVENTS);
    expect(pages()).toBe(EVENTS / 2);
  }, 60_000);
});
