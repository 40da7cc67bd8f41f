import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { pollHealth, type ServerProcess, spawnServer } from "../../support/server-process.ts";

/**
 * Issue 28, High 1: one address with no account opened ~19,000 /api/PingLink sockets on a link it made itself and
 * the server ran out of descriptors (/api/health and /login timed out). Here the real server runs with a
 * 1,024-descriptor limit, so a few hundred sockets are enough to show it: without caps they take every descriptor.
 * TRUST_PROXY=loopback lets the test speak for many client addresses through X-Forwarded-For.
 */
const PER_ADDRESS = 40;
const PER_LINK = 150;

type Opened = { ws: WebSocket; code: number | null; reason: string; isOpen: boolean };

/** Opens a WebSocket and settles once it is open and has stayed so for a moment, or once it closed. */
function openSocket(url: string, address?: string): Promise<Opened> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, address ? ({ headers: { "x-forwarded-for": address } } as unknown as string[]) : undefined);
    const opened: Opened = { ws, code: null, reason: "", isOpen: false };
    // A server out of descriptors neither opens nor refuses: counted as not open.
    let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(() => resolve(opened), 10_000);
    ws.onopen = () => {
      clearTimeout(timer);
      opened.isOpen = true;
      // A refused socket is closed right after it opens: wait for that close, or take it as held.
      timer = setTimeout(() => resolve(opened), 300);
    };
    ws.onclose = (e) => {
      clearTimeout(timer);
      opened.isOpen = false;
      opened.code = e.code;
      opened.reason = e.reason;
      resolve(opened);
    };
  });
}

/** Opens `count` sockets, `parallel` at a time. */
async function openMany(count: number, parallel: number, make: (i: number) => Promise<Opened>): Promise<Opened[]> {
  const all: Opened[] = [];
  for (let i = 0; i < count; i += parallel) {
    all.push(...(await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, (_, k) => make(i + k)))));
  }
  return all;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.POSITIVE_INFINITY;
}

describe("WebSockets are capped per address, per link and in all; HTTP keeps answering", () => {
  let server: ServerProcess;
  const held: Opened[] = [];

  beforeAll(async () => {
    server = await spawnServer({
      wrap: ["prlimit", "--nofile=1024:1024", "--"],
      env: {
        MEMORY_LIMIT: "1GiB",
        TRUST_PROXY: "loopback",
        WEBSOCKETS_PER_ADDRESS: String(PER_ADDRESS),
        WEBSOCKETS_PER_LINK: String(PER_LINK),
      },
    });
  }, 60_000);
  afterAll(async () => {
    for (const o of held) o.ws.close();
    await server?.kill();
  });

  async function anonymousLink(address: string): Promise<string> {
    const res = await fetch(`${server.endpoint}/api/JoinPublisher`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": address },
      body: "{}",
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { linkId: string }).linkId;
  }

  test("one address, many links, many addresses: each cap refuses with its reason; /api/health and /login answer throughout", async () => {
    const ws = server.endpoint.replace("http", "ws");
    const baselinePoll = pollHealth(server.endpoint, 10);
    await Bun.sleep(1000);
    const baseline = await baselinePoll.stop();

    const health = pollHealth(server.endpoint, 10);
    // One address, one link of its own: the review's attack.
    const link = await anonymousLink("198.51.100.1");
    const own = await openMany(300, 50, () => openSocket(`${ws}/api/PingLink?link_id=${link}`, "198.51.100.1"));
    // Many addresses on one link: the link's cap.
    const link2 = await anonymousLink("198.51.100.2");
    const spread = await openMany(300, 50, (i) => openSocket(`${ws}/api/PingLink?link_id=${link2}`, `10.1.${i >> 8}.${i & 255}`));
    // Many addresses on live views of other links: the global cap (three quarters of 1,024 descriptors).
    const links = [await anonymousLink("198.51.100.3"), await anonymousLink("198.51.100.4"), await anonymousLink("198.51.100.5")];
    const viewers = await openMany(900, 50, (i) =>
      openSocket(`${ws}/api/LiveSubscribe?link_id=${links[i % 3]}`, `10.2.${i >> 8}.${i & 255}`),
    );
    held.push(...own, ...spread, ...viewers);
    // While they are held: a page and the health check.
    const login = await fetch(`${server.endpoint}/login`, { signal: AbortSignal.timeout(10_000) });
    expect(login.status).toBe(200);
    await Bun.sleep(500);
    const during = await health.stop();

    // Without the caps the sockets take every descriptor and health answers fail (Infinity); with them every one
    // answers, and typically about as fast as before the attack.
    expect(during.length).toBeGreaterThan(20);
    expect(during.filter((ms) => !Number.isFinite(ms))).toEqual([]);
    expect(median(during)).toBeLessThan(median(baseline) * 10 + 50);

    const isOpen = (o: Opened) => o.isOpen;
    expect(own.filter(isOpen)).toHaveLength(PER_ADDRESS);
    expect(own.find((o) => !o.isOpen)).toMatchObject({ code: 1013, reason: expect.stringContaining("from this address") });
    expect(spread.filter(isOpen)).toHaveLength(PER_LINK);
    expect(spread.find((o) => !o.isOpen)).toMatchObject({ code: 1013, reason: expect.stringContaining("of this link") });
    const total = own.filter(isOpen).length + spread.filter(isOpen).length + viewers.filter(isOpen).length;
    expect(total).toBe(768);
    expect(viewers.find((o) => !o.isOpen)).toMatchObject({ code: 1013, reason: expect.stringContaining("too many open connections") });

    // Closing sockets gives their places back.
    for (const o of own) o.ws.close();
    await Bun.sleep(300);
    const again = await openSocket(`${ws}/api/PingLink?link_id=${link}`, "198.51.100.1");
    held.push(again);
    expect(again.isOpen).toBe(true);
  }, 120_000);
});

test("the server raises its soft descriptor limit to the hard one at start, and its WebSocket cap follows", async () => {
  const server = await spawnServer({ wrap: ["prlimit", "--nofile=1024:4096", "--"], env: { MEMORY_LIMIT: "1GiB" } });
  try {
    const limits = readFileSync(`/proc/${server.proc.pid}/limits`, "utf8");
    expect(limits).toMatch(/Max open files\s+4096\s+4096/);
    const listening = server
      .log()
      .split("\n")
      .find((line) => line.includes("tapscope server listening"));
    expect(JSON.parse(listening!)).toMatchObject({ descriptorLimit: 4096, maxWebSockets: 3072 });
  } finally {
    await server.kill();
  }
}, 60_000);
