import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import { startServer, type TestServer } from "../support/publish-server.ts";
import { BUN, hasCommand, MAIN, ROOT, type Running, start, waitUntil } from "./harness.ts";

/**
 * Requests in flight, with a real program under `tapscope run` publishing to a real server: a handler that hangs is
 * shown as pending (method, URL, start) while it waits, and the event with the same id ends it when the client gives
 * up. On the main thread and on relay threads.
 */
let server: TestServer;
const pending: PendingRequest[] = [];
const programs: Array<ReturnType<typeof Bun.spawn>> = [];
const logged: Running[] = [];

beforeAll(async () => {
  server = await startServer();
  server.sinks.add({ accept() {}, showPending: (_target, requests) => pending.push(...requests) });
}, 30_000);
afterAll(async () => {
  for (const p of programs) p.kill("SIGTERM");
  await Promise.all([...programs.map((p) => p.exited), ...logged.map((r) => r.stop().catch(() => 0))]);
  await server?.stop();
});

async function runHangServer(env: Record<string, string>): Promise<number> {
  const { token } = await server.namespaceWithToken();
  const proc = Bun.spawn([BUN, MAIN, "run", "--", "python3", join(ROOT, "tests/agent/fixtures/hang-server.py")], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "ignore",
    env: { ...process.env, TAPSCOPE_ENDPOINT: server.endpoint, TAPSCOPE_TOKEN: token, ...env },
  });
  programs.push(proc);
  const reader = proc.stdout.getReader();
  let out = "";
  while (!/port \d+/.test(out)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the program exited: ${out}`);
    out += new TextDecoder().decode(value);
  }
  return Number(/port (\d+)/.exec(out)![1]);
}

describe.each([
  ["the main thread", "1"],
  ["relay threads", "2"],
])("requests in flight on %s", (_name, threads) => {
  test("a hung request is published as pending while it waits, then its event (same id) ends it", async () => {
    expect(hasCommand("curl")).toBe(true);
    const port = await runHangServer({ TAPSCOPE_RELAY_THREADS: threads });
    const path = `/hang?threads=${threads}&token=s3cret`;
    const started = Date.now();
    const curl = Bun.spawn(["curl", "-s", "--max-time", "5", `http://127.0.0.1:${port}${path}`], { stdout: "ignore", stderr: "ignore" });
    const isOurs = (p: { http_req_path: string }) => p.http_req_path.startsWith(`/hang?threads=${threads}&`);
    // Shown while curl still waits, not when it gives up.
    const notice = await waitUntil(() => pending.find(isOurs), 20_000, "a pending notice");
    expect(curl.exitCode).toBeNull();
    expect(notice.http_req_method).toBe("GET");
    expect(notice.http_req_path).toBe(`/hang?threads=${threads}&token=%5Bredacted%5D`);
    expect(notice.http_is_outgoing).toBe(false);
    // The notice comes once the request has waited a second, measured from its own start.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(Math.abs(notice.time / 1000 - started)).toBeLessThan(5000);
    // Never stored: nothing reached the store sinks until the request ended.
    expect(server.events().filter((e) => e.event_id === notice.event_id)).toEqual([]);

    expect(await curl.exited).toBe(28);
    const [event] = await waitUntil(
      () => {
        const found = server.events().filter((e: TracedEvent) => e.event_id === notice.event_id);
        return found.length > 0 ? found : null;
      },
      20_000,
      "the event that ends the pending request",
    );
    expect(event!.http_req_path).toBe(notice.http_req_path);
    expect(event!.http_unanswered).toBe("client_aborted");
    // Shown once, however long it waited.
    expect(pending.filter(isOurs)).toHaveLength(1);

    // An answered request is never shown as pending.
    expect(await (await fetch(`http://127.0.0.1:${port}/ok?threads=${threads}`)).text()).toBe("ok");
    await waitUntil(() => server.events().some((e) => e.http_req_path === `/ok?threads=${threads}`), 20_000, "the /ok event");
    await Bun.sleep(1500);
    expect(pending.filter((p) => p.http_req_path.startsWith("/ok"))).toEqual([]);
  }, 60_000);
});

describe.each([
  ["the main thread", "1"],
  ["relay threads", "2"],
])("run --log on %s, publishing nowhere", (_name, threads) => {
  test("a hung request gets one line once it has waited a second, while the client waits, then its end", async () => {
    const r = start(["python3", join(ROOT, "tests/agent/fixtures/hang-server.py")], {
      runArgs: ["--log"],
      env: { TAPSCOPE_RELAY_THREADS: threads },
    });
    logged.push(r);
    const port = Number(/port (\d+)/.exec(await r.waitForOutput(/port \d+/, 30_000))![1]);
    const curl = Bun.spawn(["curl", "-s", "--max-time", "4", `http://127.0.0.1:${port}/hang/log`], { stdout: "ignore", stderr: "ignore" });
    const waiting = /··· GET {2}\/hang\/log +waiting (\d+\.\d)s$/m;
    const line = await waitUntil(() => waiting.exec(r.stderr()), 20_000, `the waiting line; stderr: ${r.stderr()}`);
    expect(curl.exitCode).toBeNull();
    expect(Number(line[1])).toBeGreaterThanOrEqual(1);

    expect(await curl.exited).toBe(28);
    await waitUntil(() => /--- GET {2}\/hang\/log +\S+ {2}unanswered: client aborted/.test(r.stderr()), 20_000, "the aborted line");
    expect(r.stderr().match(/··· GET {2}\/hang\/log/g)).toHaveLength(1);

    // Answered at once: its usual line and nothing more.
    expect(await (await fetch(`http://127.0.0.1:${port}/ok/log`)).text()).toBe("ok");
    await waitUntil(() => / 200 GET {2}\/ok\/log /.test(r.stderr()), 20_000, "the /ok/log line");
    await Bun.sleep(1500);
    expect(r.stderr()).not.toMatch(/··· GET {2}\/ok/);
  }, 60_000);
});
