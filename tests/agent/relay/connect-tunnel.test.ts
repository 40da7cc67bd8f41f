import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import type { Server } from "bun";
import { formatLogLine } from "~/agent/log-line.ts";
import { parseAuthority } from "~/agent/relay/connect-tunnel.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { ROOT, scratchDir, start } from "../harness.ts";
import { makeCa, makeLeaf } from "../tls-pki.ts";

/**
 * Programs that reach HTTPS through a forward proxy (curl -x, Python requests with HTTPS_PROXY, Node with a proxy
 * agent): after the proxy's 2xx to CONNECT, the tunnel is a connection of its own to the named authority, decrypted
 * and parsed as a direct one and parented to the CONNECT, which lasts as long as the tunnel. A refusing proxy is
 * recorded as such. The proxy here is a small real one, run by the test.
 */
const NAME = "api.example.test";
let scratch: ReturnType<typeof scratchDir>;
let caFile: string;
let https: Server<undefined>;
let plain: Server<undefined>;
let untrusted: Server<undefined>;
let proxy: net.Server;
let proxyPort = 0;
/** CONNECT requests the proxy saw, with whether they carried credentials. */
const seen: string[] = [];
const CREDENTIALS = `Basic ${Buffer.from("user:pass").toString("base64")}`;

/**
 * A forward proxy: CONNECT to any local port; "auth.test" wants credentials (407 with a body, the connection kept
 * for the client to ask again), "forbidden.test" is refused (403). Names resolve to 127.0.0.1 here.
 */
function startProxy(): Promise<number> {
  proxy = net.createServer((client) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buffered.subarray(0, end).toString("latin1");
      const rest = buffered.subarray(end + 4);
      buffered = Buffer.alloc(0);
      const [method, authority] = head.split(" ");
      const [host, port] = (authority ?? "").split(":");
      const hasCredentials = head.includes(`Proxy-Authorization: ${CREDENTIALS}`);
      seen.push(`${method} ${authority}${hasCredentials ? " (credentials)" : ""}`);
      if (method !== "CONNECT") {
        client.end("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      if (host === "forbidden.test") {
        client.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 10\r\nConnection: close\r\n\r\nforbidden\n");
        return;
      }
      if (host === "auth.test" && !hasCredentials) {
        client.write(
          'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 12\r\n\r\nauth needed\n',
        );
        return;
      }
      client.off("data", onData);
      client.pause();
      const upstream = net.connect(Number(port), "127.0.0.1", () => {
        client.write("HTTP/1.1 200 Connection established\r\n\r\n");
        if (rest.length > 0) upstream.write(rest);
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    };
    client.on("data", onData);
    client.on("error", () => {});
  });
  return new Promise((resolve) => proxy.listen(0, "127.0.0.1", () => resolve((proxy.address() as net.AddressInfo).port)));
}

beforeAll(async () => {
  scratch = scratchDir("tapscope-proxy-tunnel-");
  makeCa(scratch.dir, "ca");
  caFile = join(scratch.dir, "ca.crt");
  const leaf = makeLeaf(scratch.dir, "ca", "leaf", [`DNS:${NAME}`, "DNS:auth.test", "DNS:localhost", "IP:127.0.0.1"]);
  makeCa(scratch.dir, "other");
  const stranger = makeLeaf(scratch.dir, "other", "stranger", [`DNS:${NAME}`]);
  const echo = async (req: Request) => new Response(`${req.method} ${new URL(req.url).pathname} ${await req.text()}\n`);
  https = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: leaf.cert, key: leaf.key }, fetch: echo });
  plain = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: echo });
  untrusted = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: stranger.cert, key: stranger.key }, fetch: echo });
  proxyPort = await startProxy();
});

afterAll(() => {
  https?.stop(true);
  plain?.stop(true);
  untrusted?.stop(true);
  proxy?.close();
  scratch?.cleanup();
});

const proxyUrl = () => `http://127.0.0.1:${proxyPort}`;
const proxyAddr = () => `127.0.0.1:${proxyPort}`;
const outbound = (e: TracedEvent) => e.http_is_outgoing;
const body = (b64: string) => Buffer.from(b64, "base64").toString();

async function both(argv: string[], env: Record<string, string>, runArgs: string[] = []) {
  const direct = start(argv, { traced: false, env });
  const traced = start(argv, { env, runArgs });
  const [directCode, tracedCode] = await Promise.all([direct.exited, traced.exited]);
  return { direct, traced, directCode, tracedCode };
}

const ours = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => !line.startsWith("tapscope: "))
    .join("\n");

/** The CONNECT and the calls inside its tunnel: the calls name it as parent and fall within its life. */
function underTunnel(events: TracedEvent[], authority: string) {
  const connect = events.find((e) => e.http_req_method === "CONNECT");
  expect(connect).toBeDefined();
  const calls = events.filter((e) => e.parent_event_id === connect!.event_id).sort((a, b) => a.time - b.time);
  expect(connect!.http_server_addr).toBe(proxyAddr());
  expect(connect!.http_req_path).toBe(authority);
  expect(connect!.http_resp_status_code).toBe(200);
  expect(connect!.tags.tunnel).toBe("closed");
  for (const call of calls) {
    expect(call.tags.proxy).toBe(proxyAddr());
    expect(call.http_server_addr).toBe(authority);
    // The CONNECT's duration is the tunnel's life: every call inside ends before it does.
    expect(call.time + call.http_duration).toBeLessThanOrEqual(connect!.time + connect!.http_duration);
  }
  return { connect: connect!, calls };
}

describe("a CONNECT's authority", () => {
  test("host:port and [v6]:port are tunnels; anything else keeps the connection plain", () => {
    expect(parseAuthority("api.example.test:443")).toEqual({ host: "api.example.test", port: 443, text: "api.example.test:443" });
    expect(parseAuthority("[2001:db8::1]:8443")).toEqual({ host: "2001:db8::1", port: 8443, text: "[2001:db8::1]:8443" });
    for (const bad of ["api.example.test", "api.example.test:0", "host:70000", "http://x:1", "a b:1", ":443", "x:443/path"]) {
      expect(parseAuthority(bad)).toBeNull();
    }
  });
});

describe("HTTPS through a forward proxy: the tunnel's calls decrypted, under the CONNECT", () => {
  test("curl -x: GET and POST in one tunnel, exact bodies, the CONNECT printed once with its authority", async () => {
    const authority = `${NAME}:${https.port}`;
    const url = `https://${authority}`;
    const argv = ["curl", "-sS", "-x", proxyUrl(), "--resolve", `${authority}:127.0.0.1`, `${url}/get`, "--next", "-x", proxyUrl()];
    argv.push("--resolve", `${authority}:127.0.0.1`, "-d", "hello through the proxy", `${url}/post`);
    const { direct, traced, directCode, tracedCode } = await both(argv, { CURL_CA_BUNDLE: caFile, NO_PROXY: "" }, ["--log"]);
    expect([directCode, direct.stdout()]).toEqual([0, "GET /get \nPOST /post hello through the proxy\n"]);
    expect(tracedCode).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    const events = await traced.waitForEvents(3, outbound);
    const { connect, calls } = underTunnel(events, authority);
    expect(
      calls.map((e) => [e.tags.tls, e.tls_server_name, e.http_req_method, e.http_req_path, body(e.http_req_body), body(e.http_resp_body)]),
    ).toEqual([
      ["decrypted", NAME, "GET", "/get", "", "GET /get \n"],
      ["decrypted", NAME, "POST", "/post", "hello through the proxy", "POST /post hello through the proxy\n"],
    ]);
    expect(formatLogLine(connect)).toMatch(new RegExp(`→200 CONNECT ${authority} +[0-9.]+m?s$`));
    expect(traced.stderr()).toContain(`→200 CONNECT ${authority} `);
    expect(traced.stderr()).not.toContain(`${authority}${authority}`);
    expect(traced.stderr()).toContain(`POST https://${authority}/post`);
    expect(traced.stderr()).toContain("TLS: 1 connection decrypted\n");
  }, 60_000);

  test("Python requests with HTTPS_PROXY", async () => {
    const authority = `localhost:${https.port}`;
    const script = `import requests\ns = requests.Session()\nprint(s.get("https://${authority}/py").text, end="")\nprint(s.post("https://${authority}/py", data=b"from python").text, end="")`;
    const env = { HTTPS_PROXY: proxyUrl(), NO_PROXY: "", no_proxy: "", REQUESTS_CA_BUNDLE: caFile };
    const { direct, traced, directCode, tracedCode } = await both(["/usr/bin/python3", "-c", script], env);
    expect([directCode, direct.stdout()]).toEqual([0, "GET /py \nPOST /py from python\n"]);
    expect(tracedCode).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    const { calls } = underTunnel(await traced.waitForEvents(3, outbound), authority);
    expect(calls.map((e) => [e.tags.tls, e.http_req_method, body(e.http_resp_body)])).toEqual([
      ["decrypted", "GET", "GET /py \n"],
      ["decrypted", "POST", "POST /py from python\n"],
    ]);
  }, 60_000);

  test("Node with https-proxy-agent", async () => {
    const authority = `localhost:${https.port}`;
    const script = join(scratch.dir, "agent.cjs");
    writeFileSync(
      script,
      `const https = require("node:https");
const { HttpsProxyAgent } = require(${JSON.stringify(join(ROOT, "node_modules/https-proxy-agent"))});
const agent = new HttpsProxyAgent(${JSON.stringify(proxyUrl())});
https.get("https://${authority}/node", { agent }, (res) => { let t = ""; res.on("data", (d) => (t += d)); res.on("end", () => { process.stdout.write(t); agent.destroy(); }); });
`,
    );
    const { direct, traced, directCode, tracedCode } = await both(["node", script], { NODE_EXTRA_CA_CERTS: caFile });
    expect([directCode, direct.stdout()]).toEqual([0, "GET /node \n"]);
    expect(tracedCode).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    const { calls } = underTunnel(await traced.waitForEvents(2, outbound), authority);
    expect(calls.map((e) => [e.tags.tls, e.http_req_method, e.http_req_path])).toEqual([["decrypted", "GET", "/node"]]);
  }, 60_000);

  test("plain HTTP inside a tunnel (curl --proxytunnel) is parsed as a call of its own", async () => {
    const authority = `localhost:${plain.port}`;
    const { direct, traced, directCode, tracedCode } = await both(
      ["curl", "-sS", "-p", "-x", proxyUrl(), `http://${authority}/inside`],
      {},
    );
    expect([directCode, direct.stdout()]).toEqual([0, "GET /inside \n"]);
    expect(tracedCode).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    const { calls } = underTunnel(await traced.waitForEvents(2, outbound), authority);
    expect(calls.map((e) => [e.protocol, e.tags.tls, e.http_req_method, e.http_req_path, e.http_resp_status_code])).toEqual([
      ["http", undefined, "GET", "/inside", 200],
    ]);
  }, 60_000);

  test("a server the program does not trust, through the proxy: its own error, the tunnel made again for it", async () => {
    const authority = `${NAME}:${untrusted.port}`;
    const argv = ["curl", "-sS", "-x", proxyUrl(), "--resolve", `${authority}:127.0.0.1`, `https://${authority}/no`];
    seen.length = 0;
    const { direct, traced, directCode, tracedCode } = await both(argv, { CURL_CA_BUNDLE: caFile });
    // Untraced one CONNECT; traced two: the relay's, whose handshake found the server untrusted, and the program's again.
    expect(seen).toEqual([`CONNECT ${authority}`, `CONNECT ${authority}`, `CONNECT ${authority}`]);
    expect(directCode).toBe(60);
    expect(tracedCode).toBe(60);
    expect(ours(traced.stderr())).toBe(direct.stderr());
    const { calls } = underTunnel(await traced.waitForEvents(2, outbound), authority);
    expect(calls.map((e) => [e.protocol, e.tls_server_name, e.tags.tls, e.tags.tls_reason])).toEqual([
      ["tcp", NAME, "not decrypted", "upstream certificate not trusted"],
    ]);
  }, 60_000);

  test("--tls off: the tunnel's TLS is recorded with its server name, not decrypted, under the CONNECT", async () => {
    const authority = `${NAME}:${https.port}`;
    const argv = ["curl", "-sS", "-x", proxyUrl(), "--resolve", `${authority}:127.0.0.1`, `https://${authority}/off`];
    const { direct, traced, tracedCode } = await both(argv, { CURL_CA_BUNDLE: caFile }, ["--tls", "off"]);
    expect(tracedCode).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    const { calls } = underTunnel(await traced.waitForEvents(2, outbound), authority);
    expect(calls.map((e) => [e.tls_server_name, e.tags.tls, e.tags.tls_reason])).toEqual([[NAME, "not decrypted", "interception off"]]);
  }, 60_000);
});

describe("a proxy that refuses", () => {
  test("407 without credentials is recorded as such; the client's own error, as untraced", async () => {
    const authority = `auth.test:${https.port}`;
    const argv = ["curl", "-sS", "-x", proxyUrl(), "--resolve", `${authority}:127.0.0.1`, `https://${authority}/x`];
    const { direct, traced, directCode, tracedCode } = await both(argv, { CURL_CA_BUNDLE: caFile });
    expect(directCode).not.toBe(0);
    expect(tracedCode).toBe(directCode);
    expect(ours(traced.stderr())).toBe(direct.stderr());
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.http_req_method, e!.http_req_path, e!.http_resp_status_code, e!.http_server_addr]).toEqual([
      "CONNECT",
      authority,
      407,
      proxyAddr(),
    ]);
  }, 60_000);

  test("403 is recorded as such", async () => {
    const authority = `forbidden.test:${https.port}`;
    const argv = ["curl", "-sS", "-x", proxyUrl(), `https://${authority}/x`];
    const { direct, traced, directCode, tracedCode } = await both(argv, {});
    expect(tracedCode).toBe(directCode);
    expect(ours(traced.stderr())).toBe(direct.stderr());
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.http_req_method, e!.http_resp_status_code]).toEqual(["CONNECT", 403]);
  }, 60_000);

  test("a 407, then the same connection asked again with credentials: the second CONNECT's tunnel is decrypted", async () => {
    const authority = `auth.test:${https.port}`;
    seen.length = 0;
    // --proxy-anyauth: curl asks without credentials first, then again on the same connection.
    const argv = ["curl", "-sS", "--proxy-anyauth", "-U", "user:pass", "-x", proxyUrl()];
    argv.push("--resolve", `${authority}:127.0.0.1`, `https://${authority}/again`);
    const traced = start(argv, { env: { CURL_CA_BUNDLE: caFile } });
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe("GET /again \n");
    expect(seen).toEqual([`CONNECT ${authority}`, `CONNECT ${authority} (credentials)`]);
    const events = await traced.waitForEvents(3, outbound);
    const connects = events.filter((e) => e.http_req_method === "CONNECT").sort((a, b) => a.time - b.time);
    expect(connects.map((e) => e.http_resp_status_code)).toEqual([407, 200]);
    const call = events.find((e) => e.http_req_method === "GET")!;
    expect([call.tags.tls, call.parent_event_id, body(call.http_resp_body)]).toEqual(["decrypted", connects[1]!.event_id, "GET /again \n"]);
  }, 60_000);

  test("a client that does not wait: the retry and the tunnel's first request in one write, after a 407", async () => {
    const authority = `auth.test:${plain.port}`;
    const script = `import socket
s = socket.create_connection(("127.0.0.1", ${proxyPort}))
s.sendall(b"CONNECT ${authority} HTTP/1.1\\r\\nHost: ${authority}\\r\\n\\r\\n")
got = b""
while not got.endswith(b"auth needed\\n"):
    got += s.recv(4096)
print(got.split(b"\\r\\n")[0].decode())
s.sendall(b"CONNECT ${authority} HTTP/1.1\\r\\nHost: ${authority}\\r\\nProxy-Authorization: ${CREDENTIALS}\\r\\n\\r\\nGET /pipelined HTTP/1.1\\r\\nHost: auth.test\\r\\nConnection: close\\r\\n\\r\\n")
rest = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    rest += chunk
print(rest.split(b"\\r\\n")[0].decode(), rest.split(b"\\r\\n\\r\\n")[-1].decode(), end="")
`;
    const { direct, traced, directCode, tracedCode } = await both(["python3", "-c", script], {});
    expect([directCode, direct.stdout()]).toEqual([
      0,
      "HTTP/1.1 407 Proxy Authentication Required\nHTTP/1.1 200 Connection established GET /pipelined \n",
    ]);
    expect(tracedCode).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    const events = await traced.waitForEvents(3, outbound);
    const connects = events.filter((e) => e.http_req_method === "CONNECT").sort((a, b) => a.time - b.time);
    expect(connects.map((e) => e.http_resp_status_code)).toEqual([407, 200]);
    const call = events.find((e) => e.http_req_method === "GET")!;
    expect([call.http_req_path, call.http_resp_status_code, call.parent_event_id]).toEqual(["/pipelined", 200, connects[1]!.event_id]);
  }, 60_000);
});
