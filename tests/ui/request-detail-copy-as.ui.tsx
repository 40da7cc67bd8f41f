import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type CopyFormat, copyAs } from "~/ui/request-detail/copy-as.ts";
import { type Arrived, startRecordingServer } from "../support/recording-server.ts";
import { b64, makeEvent } from "./live-event-factory.ts";

// Each generated snippet is run for real by its own tool (curl, node, python3 with requests, HTTPie) against a local
// server, which records what arrived.

const dir = mkdtempSync(join(tmpdir(), "tapscope-copy-as-"));
let port = 0;
let arrived: Arrived[] = [];
let close = () => {};

beforeAll(async () => {
  ({ port, arrived, close } = await startRecordingServer(() => "answered"));
});

afterAll(() => {
  close();
  rmSync(dir, { recursive: true, force: true });
});

const python = Bun.which("python3", { PATH: "/usr/bin:/bin" }) ?? "python3";
const tools: Record<Exclude<CopyFormat, "curl">, (snippet: string) => string[]> = {
  fetch: (snippet) => {
    const file = join(dir, "fetch.mjs");
    writeFileSync(file, snippet);
    return ["node", file];
  },
  node: (snippet) => {
    const file = join(dir, "node.mjs");
    writeFileSync(file, snippet);
    return ["node", file];
  },
  python: (snippet) => {
    const file = join(dir, "replay.py");
    writeFileSync(file, snippet);
    return [python, file];
  },
  httpie: (snippet) => ["sh", "-c", snippet],
};

async function replay(format: CopyFormat, event: TracedEvent): Promise<Arrived> {
  arrived.length = 0;
  const snippet = copyAs(format, event);
  const argv = format === "curl" ? ["sh", "-c", `${snippet} --silent --show-error`] : tools[format](snippet);
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout as ReadableStream).text(),
    new Response(proc.stderr as ReadableStream).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`${format} failed (${code}): ${stderr}\n--- snippet ---\n${snippet}`);
  expect(stdout).toContain("answered");
  expect(arrived.length).toBe(1);
  return arrived[0]!;
}

const hostileText = `{"name":"O'Brien \\"Bob\\"","note":"$(whoami) \`id\` \\\\ back","city":"Zürich — 東京 🚀"}\nsecond line\ttab\r\nthird`;
const binary = Buffer.from([0, 1, 2, 0xff, 0xfe, 10, 13, 39, 34, 36, 0x80, 0x5c, 0]);

const formats: CopyFormat[] = ["curl", "fetch", "node", "python", "httpie"];

describe("Copy as, each snippet run for real", () => {
  for (const format of formats) {
    test(`${format}: method, path and query, headers (quotes, separators, repeated) and a text body with quotes, newlines and non-ASCII`, async () => {
      const event = makeEvent({
        http_req_method: "PATCH",
        http_req_path: "/orders/7?q=a%20b&x=1&z=%C3%BC",
        http_req_host: `127.0.0.1:${port}`,
        http_req_headers: [
          ["Host", `127.0.0.1:${port}`],
          ["Content-Type", "application/json; charset=utf-8"],
          ["X-Quote", `it's "quoted" $HOME \\n a:b=c@d`],
          ["X-Repeat", "one"],
          ["X-Repeat", "two"],
          ["Accept", "text/plain"],
          ["Content-Length", "999"],
          ["Connection", "keep-alive"],
        ],
        http_req_body: b64(hostileText),
      });
      const got = await replay(format, event);
      expect(got.method).toBe("PATCH");
      expect(got.url).toBe("/orders/7?q=a%20b&x=1&z=%C3%BC");
      expect(got.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(got.headers["x-quote"]).toBe(`it's "quoted" $HOME \\n a:b=c@d`);
      // node:http joins a repeated header with ", ": sent as two lines or as one joined line, both read the same.
      expect(got.headers["x-repeat"]).toBe("one, two");
      expect(got.headers.accept).toBe("text/plain");
      expect(got.body.toString("utf8")).toBe(hostileText);
      expect(got.headers["content-length"]).toBe(String(Buffer.byteLength(hostileText)));
    }, 30_000);

    test(`${format}: a binary body arrives byte for byte`, async () => {
      const event = makeEvent({
        http_req_method: "PUT",
        http_req_path: "/blob",
        http_req_host: `127.0.0.1:${port}`,
        http_req_headers: [["Content-Type", "application/octet-stream"]],
        http_req_body: binary.toString("base64"),
      });
      const got = await replay(format, event);
      expect(got.method).toBe("PUT");
      expect(got.headers["content-type"]).toBe("application/octet-stream");
      expect(got.body.equals(binary)).toBe(true);
    }, 30_000);

    test(`${format}: a GET without a body sends none and invents no content type`, async () => {
      const event = makeEvent({
        http_req_method: "GET",
        http_req_path: "/search?q=1",
        http_req_host: `127.0.0.1:${port}`,
        http_req_headers: [["X-Only", "this"]],
      });
      const got = await replay(format, event);
      expect(got.method).toBe("GET");
      expect(got.url).toBe("/search?q=1");
      expect(got.headers["x-only"]).toBe("this");
      expect(got.headers["content-type"]).toBeUndefined();
      expect(got.body.length).toBe(0);
    }, 30_000);
  }
});

describe("Copy as, the text itself", () => {
  test("header names that are not HTTP tokens are left out of every format", () => {
    const event = makeEvent({
      http_req_headers: [
        ["@/etc/passwd", "x"],
        ["Bad\nName", "z"],
        ["Good", "y"],
      ],
    });
    for (const format of formats) {
      const snippet = copyAs(format, event);
      expect(snippet).not.toContain("passwd");
      expect(snippet).toContain("Good");
    }
  });
});
