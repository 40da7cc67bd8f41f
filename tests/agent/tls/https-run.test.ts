import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Server, TCPSocketListener } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { ROOT, scratchDir, start } from "../harness.ts";
import { makeCa, makeLeaf, type Pem } from "../tls-pki.ts";

/**
 * `tapscope run` decrypts a program's outbound HTTPS: real curl against local HTTPS servers signed by a test CA the
 * program trusts the way a user sets it up (CURL_CA_BUNDLE), compared with the same command untraced.
 */
const NAME = "api.example.test";
const GRPC = join(ROOT, "tests/agent/fixtures/tls-clients/grpc.cjs");
let scratch: ReturnType<typeof scratchDir>;
let ca: Pem;
let caFile: string;
let h1: Server<undefined>;
let expired: Server<undefined>;
let h2: Http2SecureServer;
let h2Port = 0;
let h1Port = 0;
let expiredPort = 0;
let banner: TCPSocketListener<undefined>;
let mtls: Server<undefined>;
let grpcServer: ReturnType<typeof Bun.spawn> | undefined;
let grpcPort = 0;

beforeAll(async () => {
  scratch = scratchDir("tapscope-https-run-");
  ca = makeCa(scratch.dir, "ca");
  caFile = join(scratch.dir, "trusted.pem");
  writeFileSync(caFile, ca.cert);
  const leaf = makeLeaf(scratch.dir, "ca", "leaf", [`DNS:${NAME}`, "DNS:localhost", "IP:127.0.0.1"]);
  const old = makeLeaf(scratch.dir, "ca", "old", [`DNS:${NAME}`, "IP:127.0.0.1"], true);
  const echo = async (req: Request) => {
    const body = await req.text();
    return new Response(`${req.method} ${new URL(req.url).pathname} ${body.length} ${body.slice(0, 20)}\n`, {
      headers: { "content-type": "text/plain" },
    });
  };
  h1 = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: leaf.cert, key: leaf.key }, fetch: echo });
  expired = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: old.cert, key: old.key }, fetch: echo });
  h1Port = h1.port ?? 0;
  expiredPort = expired.port ?? 0;
  h2 = createSecureServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
    let n = 0;
    req.on("data", (d: Buffer) => {
      n += d.length;
    });
    req.on("end", () => res.end(`h2 ${req.method} ${req.url} ${n}\n`));
  });
  await new Promise<void>((resolve) => h2.listen(0, "127.0.0.1", resolve));
  h2Port = (h2.address() as AddressInfo).port;
  makeLeaf(scratch.dir, "ca", "client", ["DNS:client.test"]);
  mtls = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: leaf.cert, key: leaf.key, requestCert: true, rejectUnauthorized: true, ca: ca.cert },
    fetch: echo,
  });
  grpcServer = Bun.spawn(["node", GRPC, "server", join(scratch.dir, "leaf.crt"), join(scratch.dir, "leaf.key")], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = (grpcServer.stdout as ReadableStream<Uint8Array>).getReader();
  grpcPort = Number(new TextDecoder().decode((await reader.read()).value).trim());
  reader.releaseLock();
  banner = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.write("220 banner.test ready\r\n");
      },
      data(socket, chunk) {
        socket.write(`250 got ${chunk.length}\r\n`);
        socket.end();
      },
    },
  });
});

afterAll(() => {
  h1?.stop(true);
  expired?.stop(true);
  h2?.close();
  banner?.stop(true);
  mtls?.stop(true);
  grpcServer?.kill();
  scratch?.cleanup();
});

const trusting = () => ({ CURL_CA_BUNDLE: caFile });
const resolveTo = (port: number) => ["--resolve", `${NAME}:${port}:127.0.0.1`];

async function both(argv: string[], env: Record<string, string>, runArgs: string[] = []) {
  const direct = start(argv, { traced: false, env });
  const traced = start(argv, { env, runArgs });
  return { direct: { code: await direct.exited, out: direct.stdout(), err: direct.stderr() }, traced, code: await traced.exited };
}

const outbound = (e: TracedEvent) => e.http_is_outgoing;
const body = (b64: string) => Buffer.from(b64, "base64").toString();

describe("tapscope run: outbound HTTPS is decrypted", () => {
  test("curl, GET and POST on one keep-alive connection: exact requests and responses, https URLs, the TLS step", async () => {
    const url = `https://${NAME}:${h1Port}`;
    const argv = [
      "curl",
      "-sS",
      ...resolveTo(h1Port),
      `${url}/v1/items?page=2`,
      "--next",
      ...resolveTo(h1Port),
      "-d",
      "amount=42",
      `${url}/v1/charges`,
    ];
    const { direct, traced, code } = await both(argv, trusting(), ["--log"]);
    expect(direct.code).toBe(0);
    expect(code).toBe(0);
    expect(traced.stdout()).toBe(direct.out);
    expect(direct.out).toBe("GET /v1/items 0 \nPOST /v1/charges 9 amount=42\n");
    const events = await traced.waitForEvents(2, outbound);
    const [get, post] = [...events].sort((a, b) => a.time - b.time);
    for (const e of [get!, post!]) {
      expect(e.protocol).toBe("http");
      expect(e.tls_server_name).toBe(NAME);
      expect(e.tags.tls).toBe("decrypted");
      expect(e.http_req_host).toBe(`${NAME}:${h1Port}`);
      expect(e.http_resp_status_code).toBe(200);
      expect(e.http_server_addr).toBe(`127.0.0.1:${h1Port}`);
    }
    expect([get!.http_req_method, get!.http_req_path, body(get!.http_resp_body)]).toEqual([
      "GET",
      "/v1/items?page=2",
      "GET /v1/items 0 \n",
    ]);
    expect([post!.http_req_method, body(post!.http_req_body), body(post!.http_resp_body)]).toEqual([
      "POST",
      "amount=42",
      "POST /v1/charges 9 amount=42\n",
    ]);
    // Connect and the TLS handshake are the first exchange's; the second reuses the connection.
    expect(get!.timing_connect).toBeGreaterThanOrEqual(0);
    expect(get!.timing_tls).toBeGreaterThan(0);
    expect(post!.timing_tls).toBe(-1);
    expect(traced.stderr()).toContain(`POST https://${NAME}:${h1Port}/v1/charges`);
    expect(traced.stderr()).toContain("(tls, h1)");
    expect(traced.stderr()).toContain("tapscope: TLS: 1 connection decrypted\n");
  });

  test("HTTP/2 by ALPN: one event per stream, the peer's protocol reaches the program", async () => {
    const url = `https://${NAME}:${h2Port}`;
    const argv = ["curl", "-sS", "--http2", ...resolveTo(h2Port), `${url}/a`, `${url}/b`, "-d", "hello"];
    const { direct, traced, code } = await both(argv, trusting());
    expect(code).toBe(direct.code);
    expect(traced.stdout()).toBe(direct.out);
    expect(direct.out).toBe("h2 POST /a 5\nh2 POST /b 5\n");
    const events = await traced.waitForEvents(2, outbound);
    expect(events.map((e) => [e.http_version, e.tags.tls, e.tags.tls_alpn, e.http_req_path, body(e.http_req_body)]).sort()).toEqual([
      ["2", "decrypted", "h2", "/a", "hello"],
      ["2", "decrypted", "h2", "/b", "hello"],
    ]);
  });

  test("--tls off: the connection is recorded, not decrypted, with that reason", async () => {
    const argv = ["curl", "-sS", ...resolveTo(h1Port), `https://${NAME}:${h1Port}/off`];
    const { direct, traced, code } = await both(argv, trusting(), ["--tls", "off"]);
    expect(code).toBe(0);
    expect(traced.stdout()).toBe(direct.out);
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.protocol, e!.tls_server_name, e!.tags.tls, e!.tags.tls_reason]).toEqual(["tcp", NAME, "not decrypted", "interception off"]);
    expect(traced.stderr()).not.toContain("TLS:");
  });

  test("an upstream certificate that fails verification: the program gets exactly its own error", async () => {
    const argv = ["curl", "-sS", ...resolveTo(expiredPort), `https://${NAME}:${expiredPort}/x`];
    const { direct, traced, code } = await both(argv, trusting());
    expect(direct.code).toBe(60);
    expect(code).toBe(60);
    expect(traced.stderr()).toContain(direct.err.trim());
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.tags.tls, e!.tags.tls_reason]).toEqual(["not decrypted", "upstream certificate not trusted"]);
    expect(traced.stderr()).toContain(`1 upstream certificate not trusted: ${NAME}`);
  });

  test("a client with its own CA list rejects the minted certificate once; the host is passed through from then on", async () => {
    // The environment trusts the server's CA (so the run verifies the server), but `--cacert` is a list of the
    // program's own the run cannot change: the first call fails (as a pinned client would), the next one works.
    const call = `curl -sS --resolve ${NAME}:${h1Port}:127.0.0.1 --cacert ${caFile} https://${NAME}:${h1Port}/pinned`;
    const argv = ["sh", "-c", `${call}; echo "first $?"; ${call}; echo "second $?"`];
    const traced = start(argv, { env: trusting() });
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe("first 60\nGET /pinned 0 \nsecond 0\n");
    const events = await traced.waitForEvents(2, outbound);
    expect(events.map((e) => [e.tls_server_name, e.tags.tls, e.tags.tls_reason])).toEqual([
      [NAME, "not decrypted", "client rejected the certificate"],
      [NAME, "not decrypted", "host passed through after the client rejected the certificate"],
    ]);
    expect(traced.stderr()).toContain(
      `TLS: 0 connections decrypted, 2 not decrypted (1 client rejected the certificate: ${NAME}; 1 host passed through after the client rejected the certificate: ${NAME})`,
    );
  });

  test("a server that speaks first is relayed as before, never held", async () => {
    const script = `import socket\ns = socket.create_connection(("127.0.0.1", ${banner.port}))\nprint(s.recv(100).decode().strip())\ns.sendall(b"EHLO me\\r\\n")\nprint(s.recv(100).decode().strip())`;
    const { direct, traced, code } = await both(["python3", "-c", script], {});
    expect(code).toBe(0);
    expect(traced.stdout()).toBe(direct.out);
    expect(direct.out).toBe("220 banner.test ready\n250 got 9\n");
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.protocol, e!.bytes_sent, e!.bytes_received]).toEqual(["tcp", 9, 34]);
  });

  test("gRPC over TLS (@grpc/grpc-js, trusting its CA by GRPC_DEFAULT_SSL_ROOTS_FILE_PATH): service, method, status and messages", async () => {
    const env = { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: caFile };
    const { direct, traced, code } = await both(["node", GRPC, "client", String(grpcPort)], env);
    expect(direct.code).toBe(0);
    expect(direct.out).toBe("echo hello from grpc\nerror 5 no such greeting\n");
    expect(code).toBe(0);
    expect(traced.stdout()).toBe(direct.out);
    const events = await traced.waitForEvents(2, outbound);
    const calls = [...events].sort((a, b) => a.time - b.time);
    expect(calls.map((e) => [e.http_version, e.tags.tls, e.tags.tls_alpn, e.tls_server_name, e.http_req_path, e.tags.grpc_status])).toEqual(
      [
        ["2", "decrypted", "h2", "localhost", "/echo.v1.Echo/Say", "0"],
        ["2", "decrypted", "h2", "localhost", "/echo.v1.Echo/Say", "5"],
      ],
    );
    expect([calls[0]!.tags.req_grpc, calls[0]!.tags.resp_grpc]).toEqual(['{1: "hello from grpc"}', '{1: "echo hello from grpc", 2: 42}']);
    expect([calls[1]!.tags.req_grpc, calls[1]!.tags.grpc_message]).toEqual(['{1: "fail"}', "no such greeting"]);
    expect(traced.stderr()).toContain("TLS: 1 connection decrypted\n");
  }, 60_000);

  test("mutual TLS: passed through with its reason; the program's own client certificate still works, a call without one fails as untraced", async () => {
    const url = `https://${NAME}:${mtls.port}/mtls`;
    const withCert = [
      ...resolveTo(mtls.port ?? 0),
      "--cert",
      join(scratch.dir, "client.crt"),
      "--key",
      join(scratch.dir, "client.key"),
      url,
    ];
    const { direct, traced, code } = await both(["curl", "-sS", ...withCert], trusting());
    expect([direct.code, direct.out]).toEqual([0, "GET /mtls 0 \n"]);
    expect(code).toBe(0);
    expect(traced.stdout()).toBe(direct.out);
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.tls_server_name, e!.tags.tls, e!.tags.tls_reason]).toEqual([NAME, "not decrypted", "mutual TLS"]);
    expect(traced.stderr()).toContain(`1 mutual TLS: ${NAME}`);
    const without = await both(["curl", "-sS", ...resolveTo(mtls.port ?? 0), url], trusting());
    expect(without.direct.code).not.toBe(0);
    expect(without.code).toBe(without.direct.code);
  }, 60_000);
});

describe("tapscope run: trust set inside the traced program's own tree", () => {
  // Tapscope's own environment names no CA: the program's tree sets it, after tapscope started.
  const cases: Array<{ name: string; argv: () => string[] }> = [
    {
      name: "NODE_EXTRA_CA_CERTS set by an env wrapper",
      argv: () => [
        "env",
        `NODE_EXTRA_CA_CERTS=${caFile}`,
        "node",
        "-e",
        `fetch("https://localhost:${h1Port}/node").then((r) => r.text()).then((t) => process.stdout.write(t))`,
      ],
    },
    {
      name: "CURL_CA_BUNDLE exported by a shell",
      argv: () => ["sh", "-c", `export CURL_CA_BUNDLE=${caFile}; curl -sS ${resolveTo(h1Port).join(" ")} https://${NAME}:${h1Port}/curl`],
    },
    {
      name: "REQUESTS_CA_BUNDLE set by an entrypoint script that then execs python",
      argv: () => {
        const script = join(scratch.dir, "entrypoint.sh");
        writeFileSync(script, `#!/bin/sh\nREQUESTS_CA_BUNDLE=${caFile}\nexport REQUESTS_CA_BUNDLE\nexec "$@"\n`, { mode: 0o755 });
        return [script, "python3", "-c", `import requests; print(requests.get("https://localhost:${h1Port}/python").text, end="")`];
      },
    },
  ];
  for (const { name, argv } of cases) {
    test(`${name}: verified against that CA and decrypted, output identical`, async () => {
      const { direct, traced, code } = await both(argv(), {});
      expect(direct.code).toBe(0);
      expect(code).toBe(0);
      expect(traced.stdout()).toBe(direct.out);
      expect(direct.out).toMatch(/^GET \/(node|curl|python) 0 \n$/);
      const [e] = await traced.waitForEvents(1, outbound);
      expect([e!.tags.tls, e!.http_req_method, e!.http_resp_status_code]).toEqual(["decrypted", "GET", 200]);
      expect(traced.stderr()).toContain("TLS: 1 connection decrypted\n");
    }, 60_000);
  }
});
