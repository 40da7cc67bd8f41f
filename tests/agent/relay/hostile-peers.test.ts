import { afterAll, expect, test } from "bun:test";
import { connect as h2connect } from "node:http2";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "../../support/ports.ts";
import { ROOT, type Running, start } from "../harness.ts";
import { h2 } from "../parse/helpers.ts";

/**
 * A traced server under `tapscope run` whose peer is hostile: while one sends what the tracer has to work hard on,
 * the server stays reachable, compared with how long a request takes when nobody attacks, in the same test.
 */
const running: Running[] = [];
const h2cServer = join(ROOT, "tests/agent/fixtures/h2c-server.mjs");
afterAll(async () => {
  await Promise.all(running.map((r) => r.stop().catch(() => 0)));
});

/** One GET over a new HTTP/2 connection: its round trip in milliseconds. */
function probe(port: number, path: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const session = h2connect(`http://127.0.0.1:${port}`);
    session.on("error", reject);
    const req = session.request({ ":path": path });
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (d: string) => {
      text += d;
    });
    req.on("end", () => {
      session.close();
      if (text !== `hello h2c ${path}`) reject(new Error(`unexpected answer ${text}`));
      else resolve(performance.now() - started);
    });
    req.on("error", reject);
    req.end();
  });
}

/** The header block of issue 28's review: a 100 KB Referer added to the table, then 30,000 one-byte references to it. */
function hpackBomb(): Buffer {
  const referer = `https://example.com/?${"a=1&".repeat(25_000)}`;
  const block = h2.block(
    h2.sizeUpdate(1024 * 1024),
    h2.indexed(2),
    h2.indexed(6),
    h2.literal(4, "/bomb"),
    h2.indexing(51, referer),
    ...Array.from({ length: 30_000 }, () => h2.indexed(62)),
  );
  return h2.headers(1, block);
}

/** Opens HTTP/2 as a client would, and once the server's SETTINGS arrive, sends `bomb`; resolves when the connection is gone. */
function sendAfterSettings(port: number, bomb: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    let isSent = false;
    const socket = connect({ port, host: "127.0.0.1" }, () => socket.write(Buffer.concat([Buffer.from(h2.preface), h2.settings()])));
    socket.on("data", () => {
      if (isSent) return;
      isSent = true;
      socket.write(bomb);
      setTimeout(() => socket.destroy(), 5000).unref();
    });
    socket.on("close", () => resolve());
    socket.on("error", () => resolve());
  });
}

test("HPACK bombs at a traced h2c server: it answers others as fast as before, the bomb's connection is recorded opaque", async () => {
  const port = await freePort();
  const r = start(["node", h2cServer, String(port), "--after-preface"], { runArgs: ["--relay-threads", "1"] });
  running.push(r);
  await r.waitForOutput("listening");
  // Warm up (the first connection pays for the run's start), then the baseline: the slowest of five requests.
  await probe(port, "/warm");
  let baseline = 0;
  for (let i = 0; i < 5; i++) baseline = Math.max(baseline, await probe(port, `/base/${i}`));

  // The parsing happens as the bombs arrive; the events are built when their connections close (the server drops them
  // after refusing the block): probe across both.
  const bombs = Promise.all(Array.from({ length: 5 }, () => sendAfterSettings(port, hpackBomb())));
  let during = 0;
  for (let i = 0; i < 3; i++) during = Math.max(during, await probe(port, `/during/${i}`));
  await bombs;
  for (let i = 3; i < 6; i++) during = Math.max(during, await probe(port, `/during/${i}`));
  console.log(`slowest request: ${baseline.toFixed(1)} ms without bombs, ${during.toFixed(1)} ms while five arrive`);
  // Before the bound, each bomb held the tracer (and the relay with it) for about half a minute.
  expect(during).toBeLessThan(Math.max(10 * baseline, baseline + 2000));

  const opaque = await r.waitForEvents(5, (e) => e.protocol === "tcp" && e.tags.passthrough !== undefined, 20_000);
  expect(opaque.map((e) => e.tags.passthrough)).toEqual(Array(5).fill("header list over 64 KiB decoded"));
  const during6 = await r.waitForEvents(6, (e) => e.protocol === "http" && e.http_req_path.startsWith("/during/"));
  expect(during6.map((e) => e.http_version)).toEqual(Array(6).fill("2"));
  const paths = r.events().map((e) => e.http_req_path);
  expect(paths).not.toContain("/bomb");
}, 120_000);

test("a Node h2c server sends its SETTINGS as soon as it accepts: every request to it is still recorded as HTTP/2", async () => {
  const port = await freePort();
  const r = start(["node", h2cServer, String(port)], { runArgs: ["--relay-threads", "1"] });
  running.push(r);
  await r.waitForOutput("listening");
  for (let i = 0; i < 20; i++) await probe(port, `/early/${i}`);
  const events = await r.waitForEvents(20, (e) => e.protocol === "http");
  expect(events.map((e) => e.http_version)).toEqual(Array(20).fill("2"));
  expect(r.events().filter((e) => e.protocol === "tcp")).toEqual([]);
}, 60_000);
