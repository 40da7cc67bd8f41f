import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { noReplayRunText } from "~/lib/protocol/replay.ts";
import { startTracedProgram, type TracedProgram } from "../support/traced-program.ts";
import { hasHorizontalScroll, namespaceTokenOf, root, screenshot, signedInSuite } from "./harness.ts";
import { liveFrame } from "./live-harness.ts";

// Resend with a real traced program: a Python server under `tapscope run`, its requests resent through the run from
// the API an admin's browser calls, and from the request detail at 1440 and 390 px.

const suite = signedInSuite({ email: "ada@example.test", timeoutMs: 20_000 });

/** The program's outbound calls land here: what it was sent, header by header. */
const upstreamHits: Array<{ path: string; edit: string | null; from: string | null; host: string | null }> = [];
const upstream = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    const url = new URL(req.url);
    upstreamHits.push({
      path: url.pathname + url.search,
      edit: req.headers.get("x-edit"),
      from: req.headers.get("x-from"),
      host: req.headers.get("host"),
    });
    return Response.json({ upstream: true, edit: req.headers.get("x-edit") });
  },
});

type Run = TracedProgram & { eventsFile: string };
let token = "";
let namespaceId = "";
let run: Run | null = null;

async function startRun(allowReplay: boolean): Promise<Run> {
  const eventsFile = join(tmpdir(), `resend-${crypto.randomUUID()}.jsonl`);
  const program = await startTracedProgram({
    runArgs: [...(allowReplay ? ["--allow-replay"] : []), "--events-file", eventsFile],
    command: ["python3", join(root, "tests/e2e/resend-server.py")],
    env: { TAPSCOPE_ENDPOINT: suite.server.baseUrl, TAPSCOPE_TOKEN: token, UPSTREAM: `http://127.0.0.1:${upstream.port}` },
    ready: /sending requests to/,
  });
  return {
    ...program,
    eventsFile,
    async stop() {
      await program.stop();
      rmSync(eventsFile, { force: true });
    },
  };
}

/** The run's events (its --events-file), once one matches. */
async function eventOf(r: Run, match: (e: TracedEvent) => boolean): Promise<TracedEvent> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    let lines: string[] = [];
    try {
      lines = readFileSync(r.eventsFile, "utf8").split("\n").filter(Boolean);
    } catch {}
    const found = lines.map((l) => JSON.parse(l) as TracedEvent).find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no such event in ${lines.length} events; the run said: ${r.output()}`);
    await Bun.sleep(100);
  }
}

type Answer = { status: number; body: Record<string, unknown> };

/** An API call from the signed-in admin's page, as the browser makes it. */
function call(name: string, body: unknown): Promise<Answer> {
  return suite.page.evaluate(
    async ({ name, body }) => {
      const res = await fetch(`/api/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
    { name, body },
  );
}

/** ResendRequest, again while the original is not stored yet (the store writes a batch within a second or so). */
async function resend(edit: { eventId: string; method?: string; path: string; headers?: Array<[string, string]>; body?: string }) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answer = await call("ResendRequest", {
      namespaceId,
      method: "GET",
      headers: [],
      ...edit,
      body: Buffer.from(edit.body ?? "").toString("base64"),
    });
    if (answer.status !== 404 || Date.now() > deadline) return answer;
    await Bun.sleep(200);
  }
}

beforeAll(async () => {
  token = await namespaceTokenOf(suite.page);
  namespaceId = await suite.page.evaluate(async () => {
    const post = async (name: string, body: unknown) =>
      (await fetch(`/api/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json();
    const { orgs } = await post("ListOrgs", {});
    return (await post("ListNamespaces", { orgId: orgs[0].orgId })).namespaces[0].namespaceId as string;
  });
}, 60_000);

afterAll(async () => {
  await run?.stop();
  upstream.stop(true);
}, 30_000);

test("without --allow-replay nothing can resend: the availability and the call say so", async () => {
  run = await startRun(false);
  await fetch(`http://127.0.0.1:${run.port}/echo?plain=1`, { method: "POST", body: "first" });
  const original = await eventOf(run, (e) => e.http_req_path === "/echo?plain=1");
  expect((await call("GetReplayAvailability", { namespaceId })).body).toEqual({ canResend: false, reason: noReplayRunText });
  const refused = await resend({ eventId: original.event_id, method: "POST", path: "/echo?plain=1", body: "again" });
  expect(refused).toEqual({ status: 409, body: { error: noReplayRunText } });

  // The detail's button says so, and offers the request as cURL instead.
  await suite.page.setViewportSize({ width: 1440, height: 900 });
  await suite.page.goto(suite.server.baseUrl + suite.home);
  const frame = liveFrame(suite.page).locator;
  await frame.locator("[role=row][data-event-id]").filter({ hasText: "/echo?plain=1" }).first().click();
  const detail = frame.getByRole("region", { name: "Request detail" });
  await detail.getByRole("button", { name: "Resend" }).click();
  const unavailable = detail.getByTestId("resend-unavailable");
  await unavailable.waitFor();
  expect(await unavailable.textContent()).toContain("No tapscope run --allow-replay of this namespace is connected");
  expect(await unavailable.getByRole("button", { name: "Copy as cURL" }).isVisible()).toBe(true);
  expect(await detail.getByRole("form", { name: "Resend this request" }).count()).toBe(0);
  await screenshot(suite.page, "resend-unavailable-1440");
  await run.stop();
  run = null;
}, 90_000);

test("an inbound request resent with an edited header and body reaches the program; the replay is published marked", async () => {
  run = await startRun(true);
  await fetch(`http://127.0.0.1:${run.port}/echo?n=1`, { method: "POST", body: "first" });
  const original = await eventOf(run, (e) => e.http_req_path === "/echo?n=1");
  expect((await call("GetReplayAvailability", { namespaceId })).body).toEqual({ canResend: true, reason: null });

  const answer = await resend({
    eventId: original.event_id,
    method: "PUT",
    path: "/echo?n=2",
    headers: [["x-edit", "edited"]],
    body: "second body",
  });
  expect(answer.status).toBe(200);
  expect(answer.body.status).toBe(200);
  expect(answer.body.sentTo).toBe(`the program at ${original.http_server_addr}`);
  // What the program itself received, in its own answer.
  expect(JSON.parse(Buffer.from(answer.body.body as string, "base64").toString())).toEqual({
    method: "PUT",
    path: "/echo?n=2",
    x_edit: "edited",
    body: "second body",
  });
  const replay = await eventOf(run, (e) => e.replay_of === original.event_id);
  expect(replay.event_id).toBe(answer.body.eventId as string);
  expect([replay.http_req_method, replay.http_req_path, replay.http_is_outgoing, replay.http_resp_status_code]).toEqual([
    "PUT",
    "/echo?n=2",
    false,
    200,
  ]);
  // The relay's own record of it is the replay: the program's request is recorded once, not again unmarked.
  const all = readFileSync(run.eventsFile, "utf8").split("\n").filter(Boolean);
  expect(all.filter((l) => (JSON.parse(l) as TracedEvent).http_req_path === "/echo?n=2").length).toBe(1);
  // Stored: a replay can itself be looked up and resent (a 404 here would mean it was never stored).
  const again = await resend({ eventId: replay.event_id, method: "GET", path: "/echo?n=3" });
  expect(again.status).toBe(200);
}, 90_000);

test("an outbound call is resent to the host it called, and a host from the caller is refused", async () => {
  expect(run).not.toBeNull();
  const r = run!;
  await fetch(`http://127.0.0.1:${r.port}/call`);
  const outbound = await eventOf(r, (e) => e.http_is_outgoing && e.http_req_path === "/items?from=program");
  expect(upstreamHits.length).toBe(1);

  const answer = await resend({ eventId: outbound.event_id, path: "/items?from=resend", headers: [["x-edit", "outbound"]] });
  expect(answer.status).toBe(200);
  expect(JSON.parse(Buffer.from(answer.body.body as string, "base64").toString())).toEqual({ upstream: true, edit: "outbound" });
  expect(upstreamHits.at(-1)).toEqual({
    path: "/items?from=resend",
    edit: "outbound",
    from: null,
    host: `127.0.0.1:${upstream.port}`,
  });

  const elsewhere = await resend({ eventId: outbound.event_id, path: "http://evil.example/items" });
  expect(elsewhere.status).toBe(400);
  expect(elsewhere.body.error).toMatch(/goes to the original request's host, never another/);
  const otherHost = await resend({ eventId: outbound.event_id, path: "/items", headers: [["Host", "evil.example"]] });
  expect(otherHost.status).toBe(400);
  expect(otherHost.body.error).toMatch(/Host header is the original request's/);
  const split = await resend({ eventId: outbound.event_id, path: "/items", headers: [["x-a", "1\r\nHost: evil.example"]] });
  expect(split.status).toBe(400);
  expect(upstreamHits.length).toBe(2);
}, 90_000);

test("Resend in the detail: the editor, the response beside the original, the replay in Live (1440 and 390 px)", async () => {
  const page = suite.page;
  run ??= await startRun(true);
  const r = run;
  for (const [width, height] of [
    [1440, 900],
    [390, 844],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.goto(suite.server.baseUrl + suite.home);
    const frame = liveFrame(page).locator;
    await frame.locator("[data-testid=connection][data-state=open]").waitFor();
    const path = `/echo?ui=${width}`;
    await fetch(`http://127.0.0.1:${r.port}${path}`, {
      method: "POST",
      headers: { authorization: "Bearer s3cret-token" },
      body: `from the list at ${width}`,
    });
    await frame.locator("[role=row][data-event-id]").filter({ hasText: path }).first().click();
    const detail = frame.getByRole("region", { name: "Request detail" });
    await detail.getByRole("button", { name: "Resend" }).click();
    const editor = detail.getByRole("form", { name: "Resend this request" });
    expect(await editor.getByLabel("Method").inputValue()).toBe("POST");
    expect(await editor.getByLabel("Path and query").inputValue()).toBe(path);
    // The captured Authorization was redacted: the editor says the replay needs the real value.
    expect(await editor.getByLabel("Headers").inputValue()).toContain("[redacted]");
    expect(await editor.getByTestId("resend-redacted").isVisible()).toBe(true);
    await editor.getByLabel("Body").fill(`edited at ${width}`);
    await editor.getByRole("button", { name: "Send" }).click();
    const result = detail.getByTestId("resend-result");
    await Promise.race([
      result.waitFor(),
      editor
        .getByRole("alert")
        .waitFor()
        .then(async () => {
          throw new Error(`Resend failed: ${await editor.getByRole("alert").textContent()}`);
        }),
    ]);
    await result.getByText(`"body": "edited at ${width}"`, { exact: false }).waitFor();
    const original = detail.getByTestId("resend-original");
    expect(await original.textContent()).toContain(`from the list at ${width}`);
    const [a, b] = [await original.boundingBox(), await result.boundingBox()];
    if (width === 1440) expect(Math.abs(a!.y - b!.y)).toBeLessThan(4);
    else expect(b!.y).toBeGreaterThan(a!.y + a!.height - 1);
    await screenshot(page, `resend-${width}`);
    expect(await hasHorizontalScroll(page)).toBe(false);
    await detail.getByRole("button", { name: "Close detail" }).click();
    await frame.locator("[role=row][data-event-id][data-replay]").filter({ hasText: path }).first().waitFor();
  }
  expect(suite.pageErrors).toEqual([]);
}, 120_000);
