import { afterAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { hasCommand, ROOT, type Running, start } from "./harness.ts";

/**
 * Requests that never got an answer, with real programs under `tapscope run`: the handler hangs and the client gives
 * up, the client resets, or the program closes without answering. Each is recorded when it ends, while the program
 * runs on, with the time it waited and why.
 */
const fixtures = join(ROOT, "tests/agent/fixtures");
const running: Running[] = [];
afterAll(async () => {
  await Promise.all(running.map((r) => r.stop().catch(() => 0)));
});

async function serve(argv: string[]): Promise<{ r: Running; port: number }> {
  const r = start(argv, { runArgs: ["--log"] });
  running.push(r);
  const out = await r.waitForOutput(/port \d+/, 30_000);
  return { r, port: Number(/port (\d+)/.exec(out)![1]) };
}

const onPath = (path: string) => (e: TracedEvent) => e.protocol === "http" && e.http_req_path === path;

/** Sends a request on a raw connection, waits, then resets the connection (SO_LINGER 0). */
function requestThenReset(port: number, path: string, waitMs: number): Promise<void> {
  return new Promise((done, fail) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      setTimeout(() => {
        socket.resetAndDestroy();
        done();
      }, waitMs);
    });
    socket.on("error", fail);
  });
}

describe("requests that never got an answer", () => {
  test("a hung handler whose client gives up (curl --max-time 1) is recorded then: client aborted, with the wait", async () => {
    expect(hasCommand("curl")).toBe(true);
    const { r, port } = await serve(["python3", join(fixtures, "hang-server.py")]);
    const curl = Bun.spawn(["curl", "-s", "--max-time", "1", `http://127.0.0.1:${port}/hang?x=1`], { stdout: "ignore", stderr: "ignore" });
    expect(await curl.exited).toBe(28); // curl's "operation timed out"
    // The handler sleeps for minutes and the program runs on: the event comes from the client's giving up.
    const [hung] = await r.waitForEvents(1, onPath("/hang?x=1"), 20_000);
    expect(r.proc.exitCode).toBeNull();
    expect(hung!.http_resp_status_code).toBe(0);
    expect(hung!.http_unanswered).toBe("client_aborted");
    // curl waited a second, its connect included; on a busy machine less of it falls after the request was read,
    // but never nothing: the bound tells the wait apart from the 0µs a request that waited used to show.
    expect(hung!.http_duration).toBeGreaterThan(100_000);
    expect(hung!.timing_wait).toBeGreaterThan(100_000);
    expect(r.stderr()).toMatch(/--- GET\s+\/hang\?x=1\s+[0-9.]+m?s\s+unanswered: client aborted/);
    expect(r.stderr()).not.toMatch(/\/hang\?x=1\s+0µs/);

    // The program still serves, and an answered request is not marked.
    expect(await (await fetch(`http://127.0.0.1:${port}/ok`)).text()).toBe("ok");
    const [ok] = await r.waitForEvents(1, onPath("/ok"));
    expect(ok!.http_unanswered).toBe("");
    expect(ok!.http_resp_status_code).toBe(200);
  }, 60_000);

  test("a client that resets the connection while waiting: reset", async () => {
    const { r, port } = await serve(["python3", join(fixtures, "hang-server.py")]);
    await requestThenReset(port, "/hang/reset", 600);
    const [e] = await r.waitForEvents(1, onPath("/hang/reset"), 20_000);
    expect(e!.http_unanswered).toBe("reset");
    expect(e!.http_duration).toBeGreaterThan(100_000);
  }, 60_000);

  test("a program that closes the connection without answering: server closed", async () => {
    const { r, port } = await serve(["python3", join(fixtures, "hang-server.py")]);
    const failed = await fetch(`http://127.0.0.1:${port}/drop`).then(
      () => "answered",
      () => "failed",
    );
    expect(failed).toBe("failed");
    const [e] = await r.waitForEvents(1, onPath("/drop"), 20_000);
    expect(e!.http_unanswered).toBe("server_closed");
    // The handler waited 0.3 s before closing.
    expect(e!.http_duration).toBeGreaterThan(200_000);
    expect(r.stderr()).toMatch(/--- GET\s+\/drop\s+[0-9.]+m?s\s+unanswered: server closed/);
  }, 60_000);

  test("an outbound call the program gives up on (a client timeout against a hung upstream): client aborted", async () => {
    // The upstream is not traced: it never answers /stuck.
    const upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Promise<Response>(() => {}) });
    try {
      const script = [
        "import urllib.request",
        "try:",
        `    urllib.request.urlopen("http://127.0.0.1:${upstream.port}/stuck", timeout=0.8)`,
        "except Exception as e:",
        "    print('gave up', type(e).__name__, flush=True)",
        "import time; time.sleep(30)",
      ].join("\n");
      const r = start(["python3", "-c", script]);
      running.push(r);
      await r.waitForOutput("gave up", 30_000);
      const [e] = await r.waitForEvents(1, onPath("/stuck"), 20_000);
      expect(e!.http_is_outgoing).toBe(true);
      expect(e!.http_unanswered).toBe("client_aborted");
      expect(e!.http_duration).toBeGreaterThan(100_000);
    } finally {
      upstream.stop(true);
    }
  }, 60_000);

  test("an HTTP/2 stream the client cancels (RST_STREAM) is recorded then: client aborted, with the wait", async () => {
    expect(hasCommand("node")).toBe(true);
    const { r, port } = await serve(["node", join(fixtures, "hang-h2-server.mjs")]);
    const client = Bun.spawn(["node", join(fixtures, "h2-give-up.mjs"), String(port), "/hang/h2", "800"], { stdout: "pipe" });
    await client.exited;
    expect(await new Response(client.stdout).text()).toBe("gave up\n");
    const [e] = await r.waitForEvents(1, onPath("/hang/h2"), 20_000);
    expect(r.proc.exitCode).toBeNull();
    expect(e!.http_version).toBe("2");
    expect(e!.http_unanswered).toBe("client_aborted");
    expect(e!.http_duration).toBeGreaterThan(100_000);
  }, 60_000);
});
