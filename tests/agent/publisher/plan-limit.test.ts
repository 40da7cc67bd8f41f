import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { startTestApp, type TestApp } from "../../support/app.ts";
import { freePort } from "../../support/ports.ts";
import { BUN, MAIN } from "../harness.ts";

// The containers limit as a user meets it: on the Free plan (billing on) three `tapscope run`s publish; a fourth is
// refused with the reason on its stderr, and its program serves all the same.
let t: TestApp;
let listening: { stop: () => Promise<void> };
let base = "";
const runs: Subprocess[] = [];

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await startTestApp({
    backend: "pglite",
    env: {
      PUBLIC_URL: base,
      STRIPE_SECRET_KEY: "sk_test_unused",
      STRIPE_WEBHOOK_SECRET: "whsec_unused",
      STRIPE_PRICE_TEAM: "price_team_test",
      STRIPE_PRICE_SCALE: "price_scale_test",
    },
  });
  const runtime = createRuntime({ config: t.config, db: t.db, now: t.clock.now });
  const server = createApp(runtime).listen({ port, hostname: "127.0.0.1" });
  listening = {
    stop: async () => {
      await server.stop(true);
      await runtime.close();
    },
  };
}, 60_000);
afterAll(async () => {
  for (const run of runs) run.kill("SIGINT");
  await Promise.all(runs.map((run) => run.exited));
  await listening?.stop();
  await t?.close();
});

function traceServer(token: string, port: number) {
  const run = Bun.spawn([BUN, MAIN, "run", "--", "python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"], {
    env: { ...process.env, TAPSCOPE_TOKEN: token, TAPSCOPE_ENDPOINT: base },
    stdout: "ignore",
    stderr: "pipe",
  });
  runs.push(run);
  let stderr = "";
  const reader = run.stderr.getReader();
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      stderr += new TextDecoder().decode(value);
    }
  })();
  return { stderr: () => stderr };
}

async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await Bun.sleep(50);
  }
}

test("Free allows three containers: a fourth run is refused with the reason and its program keeps serving", async () => {
  const u = await t.onboardedUser();
  const { token } = (await t.call("/api/GenerateNamespaceToken", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body;
  const ports = await Promise.all([1, 2, 3, 4].map(() => freePort()));
  const first = ports.slice(0, 3).map((port) => traceServer(token, port));
  for (const run of first) await until(() => run.stderr().includes("sending requests to"));
  // The three are connected (a publisher joins, then opens its socket).
  await until(() => first.every((run) => !run.stderr().includes("refused")), 5000);
  await Bun.sleep(500);
  const fourth = traceServer(token, ports[3]!);
  await until(() => fourth.stderr().includes("refused"));
  expect(fourth.stderr()).toContain(
    "The Free plan allows 3 containers (tapscope runs publishing at once) per organization and 3 are running",
  );
  let answer = 0;
  await until(() => {
    void fetch(`http://127.0.0.1:${ports[3]}/`)
      .then((r) => {
        answer = r.status;
      })
      .catch(() => {});
    return answer === 200;
  });
  expect(answer).toBe(200);
}, 90_000);
