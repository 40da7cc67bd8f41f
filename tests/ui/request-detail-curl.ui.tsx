import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { shellQuote, toCurl } from "~/ui/request-detail/curl.ts";
import { type Arrived, startRecordingServer } from "../support/recording-server.ts";
import { b64, makeEvent } from "./live-event-factory.ts";

let port = 0;
let arrived: Arrived[] = [];
let close = () => {};

beforeAll(async () => {
  ({ port, arrived, close } = await startRecordingServer((req) => `echo ${req.method} ${req.url}`));
});

afterAll(() => close());

async function run(command: string): Promise<{ stdout: string; code: number }> {
  arrived.length = 0;
  const proc = Bun.spawn(["sh", "-c", `${command} --silent --show-error`], { stdout: "pipe", stderr: "pipe" });
  const stdout = await new Response(proc.stdout as ReadableStream).text();
  const code = await proc.exited;
  if (code !== 0) throw new Error(`curl failed (${code}): ${await new Response(proc.stderr as ReadableStream).text()}`);
  return { stdout, code };
}

describe("shellQuote", () => {
  test("round-trips hostile text through a real shell", async () => {
    const hostile = `it's "quoted" $HOME \`id\` $(echo pwned) \\ back; rm -rf / & | > < * ? [a] {b} !x\nline2\ttab`;
    const proc = Bun.spawn(["sh", "-c", `printf '%s' ${shellQuote(hostile)}`], { stdout: "pipe" });
    expect(await new Response(proc.stdout as ReadableStream).text()).toBe(hostile);
  });
});

describe("Copy as cURL, run for real", () => {
  test("replays method, path with query, headers in order and a JSON body", async () => {
    const body = JSON.stringify({ name: "O'Brien", note: '$(whoami) `id` "q"', n: 1 });
    const event = makeEvent({
      http_req_method: "POST",
      http_req_path: "/orders?id=7&x=a%20b",
      http_req_host: `127.0.0.1:${port}`,
      http_req_headers: [
        ["Host", `127.0.0.1:${port}`],
        ["Content-Type", "application/json"],
        ["X-Trace", "abc'def"],
        ["Authorization", "Bearer t0k3n"],
        ["Content-Length", String(body.length)],
        ["X-Empty", ""],
      ],
      http_req_body: b64(body),
    });
    const { command } = toCurl(event);
    const { stdout } = await run(command);
    expect(stdout).toBe("echo POST /orders?id=7&x=a%20b");
    const got = arrived[0]!;
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/orders?id=7&x=a%20b");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["x-trace"]).toBe("abc'def");
    expect(got.headers.authorization).toBe("Bearer t0k3n");
    expect(got.headers["x-empty"]).toBe("");
    expect(got.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(got.body.toString("utf8")).toBe(body);
    const names = got.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(names.indexOf("content-type")).toBeLessThan(names.indexOf("x-trace"));
  });

  test("replays a binary body byte for byte", async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 10, 13, 39, 34, 36, 0x80, 0]);
    const event = makeEvent({
      http_req_method: "PUT",
      http_req_path: "/blob",
      http_req_host: `127.0.0.1:${port}`,
      http_req_headers: [["Content-Type", "application/octet-stream"]],
      http_req_body: bytes.toString("base64"),
    });
    await run(toCurl(event).command);
    expect(arrived[0]!.method).toBe("PUT");
    expect(arrived[0]!.body.equals(bytes)).toBe(true);
  });

  test("a GET without body sends no body and no invented content type; URL brackets are not globbed", async () => {
    const event = makeEvent({
      http_req_method: "GET",
      http_req_path: "/search?q=[1]{2}",
      http_req_host: `127.0.0.1:${port}`,
      http_req_headers: [["Accept", "text/plain"]],
    });
    const { command } = toCurl(event);
    expect(command).not.toContain("-X");
    await run(command);
    expect(arrived[0]!.method).toBe("GET");
    expect(arrived[0]!.url).toBe("/search?q=[1]{2}");
    expect(arrived[0]!.headers["content-type"]).toBeUndefined();
    expect(arrived[0]!.body.length).toBe(0);
  });

  test("a text body without a content type is sent without curl's form content type", async () => {
    const event = makeEvent({
      http_req_method: "POST",
      http_req_path: "/raw",
      http_req_host: `127.0.0.1:${port}`,
      http_req_headers: [],
      http_req_body: b64("a=1&b=@file"),
    });
    await run(toCurl(event).command);
    expect(arrived[0]!.headers["content-type"]).toBeUndefined();
    expect(arrived[0]!.body.toString()).toBe("a=1&b=@file");
  });

  test("header names that are not HTTP tokens are dropped instead of reaching curl's option parser", () => {
    const event = makeEvent({
      http_req_headers: [
        ["@/etc/passwd", "x"],
        ["Good", "y"],
        ["Bad\nName", "z"],
      ],
    });
    const { command } = toCurl(event);
    expect(command).not.toContain("passwd");
    expect(command).toContain("-H 'Good: y'");
  });

  test("reports a truncated request body", () => {
    expect(toCurl(makeEvent({ http_req_body: b64("abc"), http_req_body_truncated: true })).isBodyTruncated).toBe(true);
  });
});
