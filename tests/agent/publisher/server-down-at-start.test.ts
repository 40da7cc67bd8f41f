import { afterAll, expect, test } from "bun:test";
import { freePort } from "../../support/ports.ts";
import { startServer, type TestServer } from "../../support/publish-server.ts";
import { BUN, MAIN, ROOT, waitForPort, waitUntil } from "../harness.ts";

/** `tapscope run` started while its server is down: it says it will retry, and says so again when it connects. */
let server: TestServer | undefined;
afterAll(() => server?.stop());

test("server down at start: the CLI says it retries, then that it connected, and publishes", async () => {
  server = await startServer();
  const endpoint = server.endpoint;
  server.app.server!.stop(true);
  const port = await freePort();
  const proc = Bun.spawn([BUN, MAIN, "run", "--", "python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"], {
    cwd: ROOT,
    stdout: "ignore",
    stderr: "pipe",
    env: { ...process.env, TAPSCOPE_ENDPOINT: endpoint, TAPSCOPE_TOKEN: "" },
  });
  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    const reader = proc.stderr.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) stderr += decoder.decode(chunk.value, { stream: true });
  })();
  try {
    await waitUntil(() => stderr.includes("could not reach"), 15_000, `the join failure; stderr: ${stderr}`);
    expect(stderr).toContain(`could not reach ${endpoint}`);
    expect(stderr).toContain("retrying in the background: requests are published once it answers");
    expect(stderr).not.toContain("not published");

    server.app.listen({ port: Number(new URL(endpoint).port), hostname: "127.0.0.1" });
    await waitUntil(() => stderr.includes("connected to"), 20_000, `the connection; stderr: ${stderr}`);
    expect(stderr).toContain(`connected to ${endpoint}; publishing requests now`);
    expect(stderr).toContain("See your requests live:");

    await waitForPort(port);
    await (await fetch(`http://127.0.0.1:${port}/?after=reconnect`)).text();
    await waitUntil(() => server!.events().some((e) => e.http_req_path === "/?after=reconnect"), 10_000, "the event at the server");
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}, 60_000);
