import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { startServer, type TestServer } from "../support/publish-server.ts";
import { BUN, MAIN, ROOT } from "./harness.ts";

/**
 * Secrets a real program sends and is started with, through `tapscope run` to a real server: none of the values
 * reaches the server, and what is not secret (names, other fields) still does.
 */
let server: TestServer;
let target: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  server = await startServer();
  target = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response('{"ok":true}', { headers: { "content-type": "application/json" } }),
  });
}, 30_000);
afterAll(async () => {
  await target?.stop(true);
  await server?.stop();
});

const secrets = [
  "mp-password-S1",
  "mp-apikey-S2",
  "hdr-apim-S3",
  "hdr-functions-S4",
  "hdr-rapidapi-S5",
  "hdr-authentication-S6",
  "qp-passphrase-S7",
  "qp-privkey-S8",
  "js-pass-S9",
  "48213579",
  "js-escaped-S10",
  "cli-dbpass-S11",
  "cli-token-S12",
  "cli-env-S13",
  "cli-urlpass-S14",
];

/** Everything the server got for an event, bodies decoded. */
function published(e: TracedEvent): string {
  const body = (b: string) => Buffer.from(b, "base64").toString("latin1");
  return `${JSON.stringify(e)}\n${body(e.http_req_body)}\n${body(e.http_resp_body)}`;
}

test("tapscope run: secrets in multipart fields, headers, query, JSON keys and the command line never reach the server", async () => {
  const args = [
    join(ROOT, "tests/agent/fixtures/secrets-client.py"),
    `http://127.0.0.1:${target.port}`,
    "--db-password=cli-dbpass-S11",
    "--api-token",
    "cli-token-S12",
    "STRIPE_SECRET_KEY=cli-env-S13",
    "--database-url=postgres://app:cli-urlpass-S14@db.internal/app",
    "--port=8000",
  ];
  const proc = Bun.spawn([BUN, MAIN, "run", "--", "python3", ...args], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, TAPSCOPE_ENDPOINT: server.endpoint, TAPSCOPE_TOKEN: "" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect([code, stdout.trim()]).toEqual([0, "done"]);
  expect(stderr).toContain("See your requests live:");
  const events = server.events().filter((e) => e.protocol === "http");
  expect(events.map((e) => e.http_req_path.split("?")[0]).sort()).toEqual(["/headers", "/json", "/upload"]);

  for (const e of events) {
    const text = published(e);
    for (const secret of secrets) expect([e.http_req_path, secret, text.includes(secret)]).toEqual([e.http_req_path, secret, false]);
  }
  // The structure stays: names, other values, the command line's shape.
  const byPath = (p: string) => events.find((e) => e.http_req_path.startsWith(p))!;
  expect(published(byPath("/upload"))).toContain('name="password"\r\n\r\n[redacted]\r\n');
  expect(published(byPath("/upload"))).toContain("visible-comment");
  expect(byPath("/headers").http_req_path).toBe("/headers?passphrase=%5Bredacted%5D&private_key=%5Bredacted%5D&page=2");
  expect(byPath("/headers").http_req_headers).toContainEqual(["X-Visible", "visible-header"]);
  expect(byPath("/headers").http_req_headers).toContainEqual(["X-Rapidapi-Key", "[redacted]"]);
  expect(published(byPath("/json"))).toContain('"user": "ann"');
  expect(published(byPath("/json"))).toContain('"pass\\u0077ord": "[redacted]"');
  const commandLine = byPath("/json").process_command_line;
  expect(commandLine).toContain("--db-password=[redacted] --api-token [redacted] STRIPE_SECRET_KEY=[redacted]");
  expect(commandLine).toContain("postgres://app:[redacted]@db.internal/app --port=8000");
}, 60_000);
