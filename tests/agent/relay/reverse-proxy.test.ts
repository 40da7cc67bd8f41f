import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { parseHostPort } from "~/agent/relay/reverse-proxy.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { freePort } from "../../support/ports.ts";
import { BUN, MAIN, scratchDir, waitForPort, waitUntil } from "../harness.ts";

/** `tapscope proxy`: the fallback reverse proxy captures the same events as `tapscope run`. */
const scratch = scratchDir();
let upstream: Server<undefined>;
beforeAll(() => {
  upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(`upstream saw ${new URL(req.url).pathname}`) });
});
afterAll(() => {
  upstream.stop(true);
  scratch.cleanup();
});

test("parses listen and target addresses", () => {
  expect(parseHostPort(":8080", "0.0.0.0")).toEqual({ host: "0.0.0.0", port: 8080 });
  expect(parseHostPort("8080", "0.0.0.0")).toEqual({ host: "0.0.0.0", port: 8080 });
  expect(parseHostPort("127.0.0.1:3000", "x")).toEqual({ host: "127.0.0.1", port: 3000 });
  expect(parseHostPort("[::1]:3000", "x")).toEqual({ host: "::1", port: 3000 });
  expect(parseHostPort("localhost:99999", "x")).toBeNull();
});

test("tapscope proxy relays requests and records them as events", async () => {
  const port = await freePort();
  const eventsFile = join(scratch.dir, "proxy.jsonl");
  const proc = Bun.spawn(
    [
      BUN,
      MAIN,
      "proxy",
      "--no-publish",
      "--events-file",
      eventsFile,
      "--listen",
      `127.0.0.1:${port}`,
      "--to",
      `127.0.0.1:${upstream.port}`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  try {
    await waitForPort(port);
    const res = await fetch(`http://127.0.0.1:${port}/via/proxy?q=1`);
    expect(await res.text()).toBe("upstream saw /via/proxy");
    const events = await waitUntil(() => {
      if (!existsSync(eventsFile)) return null;
      const list = readFileSync(eventsFile, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as TracedEvent);
      return list.length > 0 ? list : null;
    });
    expect(events[0]!.http_req_method).toBe("GET");
    expect(events[0]!.http_req_path).toBe("/via/proxy?q=1");
    expect(events[0]!.http_resp_status_code).toBe(200);
    expect(events[0]!.http_server_addr).toBe(`127.0.0.1:${upstream.port}`);
  } finally {
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  }
  expect(await new Response(proc.stderr).text()).toContain(`tapscope: proxying 127.0.0.1:${port} -> 127.0.0.1:${upstream.port}`);
});
