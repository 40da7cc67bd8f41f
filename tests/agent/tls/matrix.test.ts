import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { hasCommand, ROOT, scratchDir, start } from "../harness.ts";
import { makeCa, makeLeaf } from "../tls-pki.ts";

/**
 * Outbound HTTPS decrypted in every common runtime: each client makes a GET and a POST (on one keep-alive
 * connection where its library does so by default) to a local HTTPS server signed by a test CA, trusting it the
 * way a user of that runtime would. Its output traced must equal its output untraced, and the events must be the
 * exact decrypted requests and responses. A runtime missing here fails loudly (CI installs them all).
 */
let scratch: ReturnType<typeof scratchDir>;
let caFile: string;
let server: Server<undefined>;
let base = "";
let goClient = "";
let javaStore = "";
const fixtures = join(ROOT, "tests/agent/fixtures/tls-clients");

beforeAll(() => {
  scratch = scratchDir("tapscope-tls-matrix-");
  const ca = makeCa(scratch.dir, "ca");
  caFile = join(scratch.dir, "ca-file.pem");
  writeFileSync(caFile, ca.cert);
  const leaf = makeLeaf(scratch.dir, "ca", "leaf", ["DNS:localhost", "IP:127.0.0.1"]);
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: leaf.cert, key: leaf.key },
    async fetch(req) {
      const body = await req.text();
      return new Response(`${req.method} ${new URL(req.url).pathname} ${body}\n`, { headers: { "content-type": "text/plain" } });
    },
  });
  base = `https://127.0.0.1:${server.port}`;
  if (hasCommand("keytool")) {
    javaStore = join(scratch.dir, "java-trust.p12");
    const args = ["-importcert", "-noprompt", "-alias", "ca", "-file", caFile, "-keystore", javaStore, "-storepass", "changeit"];
    const made = spawnSync("keytool", args, { encoding: "utf8" });
    if (made.status !== 0) throw new Error(`keytool failed: ${made.stderr}`);
  }
  if (hasCommand("go")) {
    goClient = join(scratch.dir, "go-client");
    const built = spawnSync("go", ["build", "-o", goClient, join(fixtures, "client.go")], {
      env: { ...process.env, CGO_ENABLED: "0", GOCACHE: join(ROOT, "node_modules/.cache/go-build"), GOPATH: join(scratch.dir, "gopath") },
      encoding: "utf8",
    });
    if (built.status !== 0) throw new Error(`go build failed: ${built.stderr}`);
  }
  // A cold `go build` of the static client takes 10-40 s on a loaded 2-core machine; the Go cache is kept between runs.
}, 120_000);
afterAll(() => {
  server?.stop(true);
  scratch?.cleanup();
});

type Client = { name: string; needs: string; argv: () => string[]; env: () => Record<string, string>; body: string };

const py = (code: string) => ["/usr/bin/python3", "-c", code];
const clients: Client[] = [
  {
    name: "curl",
    needs: "curl",
    argv: () => ["curl", "-sS", `${base}/get`, "--next", "-d", "hello from curl", `${base}/post`],
    env: () => ({ CURL_CA_BUNDLE: caFile }),
    body: "hello from curl",
  },
  {
    name: "python urllib",
    needs: "/usr/bin/python3",
    argv: () =>
      py(
        `import urllib.request as u\nprint(u.urlopen("${base}/get").read().decode(), end="")\nprint(u.urlopen(u.Request("${base}/post", data=b"hello from urllib")).read().decode(), end="")`,
      ),
    env: () => ({ SSL_CERT_FILE: caFile }),
    body: "hello from urllib",
  },
  {
    name: "python requests",
    needs: "/usr/bin/python3",
    argv: () =>
      py(
        `import requests\ns = requests.Session()\nprint(s.get("${base}/get").text, end="")\nprint(s.post("${base}/post", data=b"hello from requests").text, end="")`,
      ),
    env: () => ({ REQUESTS_CA_BUNDLE: caFile }),
    body: "hello from requests",
  },
  {
    name: "python httpx",
    needs: "/usr/bin/python3",
    argv: () =>
      py(
        `import httpx\nwith httpx.Client() as c:\n    print(c.get("${base}/get").text, end="")\n    print(c.post("${base}/post", content=b"hello from httpx").text, end="")`,
      ),
    env: () => ({ SSL_CERT_FILE: caFile }),
    body: "hello from httpx",
  },
  {
    name: "node https and fetch",
    needs: "node",
    argv: () => [
      "node",
      "-e",
      `require("https").get("${base}/get", (r) => { let t = ""; r.on("data", (d) => (t += d)); r.on("end", async () => { process.stdout.write(t); process.stdout.write(await (await fetch("${base}/post", { method: "POST", body: "hello from node" })).text()); }); });`,
    ],
    env: () => ({ NODE_EXTRA_CA_CERTS: caFile }),
    body: "hello from node",
  },
  {
    name: "bun fetch",
    needs: process.execPath,
    argv: () => [
      process.execPath,
      "-e",
      `process.stdout.write(await (await fetch("${base}/get")).text()); process.stdout.write(await (await fetch("${base}/post", { method: "POST", body: "hello from bun" })).text());`,
    ],
    env: () => ({ NODE_EXTRA_CA_CERTS: caFile }),
    body: "hello from bun",
  },
  {
    name: "go net/http (static)",
    needs: "go",
    argv: () => [goClient, base],
    env: () => ({ SSL_CERT_FILE: caFile }),
    body: "hello from go",
  },
  {
    name: "java HttpClient",
    needs: "java",
    argv: () => ["java", join(fixtures, "Client.java"), base, "default"],
    env: () => ({ JAVA_TOOL_OPTIONS: `-Djavax.net.ssl.trustStore=${javaStore} -Djavax.net.ssl.trustStorePassword=changeit` }),
    body: "hello from java",
  },
  {
    name: "ruby net/http",
    needs: "ruby",
    argv: () => [
      "ruby",
      "-rnet/http",
      "-e",
      `u = URI("${base}"); Net::HTTP.start(u.host, u.port, use_ssl: true) { |h| print h.get("/get").body; print h.post("/post", "hello from ruby").body }`,
    ],
    env: () => ({ SSL_CERT_FILE: caFile }),
    body: "hello from ruby",
  },
  {
    name: "php curl",
    needs: "php",
    argv: () => [
      "php",
      "-r",
      `$h = curl_init(); curl_setopt_array($h, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => getenv("SSL_CERT_FILE")]); curl_setopt($h, CURLOPT_URL, "${base}/get"); echo curl_exec($h); curl_setopt_array($h, [CURLOPT_URL => "${base}/post", CURLOPT_POSTFIELDS => "hello from php"]); echo curl_exec($h);`,
    ],
    env: () => ({ SSL_CERT_FILE: caFile }),
    body: "hello from php",
  },
];

const outbound = (e: TracedEvent) => e.http_is_outgoing;
const text = (b64: string) => Buffer.from(b64, "base64").toString();

describe("HTTPS in every common runtime: identical output, exact decrypted events", () => {
  for (const client of clients) {
    test(client.name, async () => {
      if (!hasCommand(client.needs)) throw new Error(`${client.needs} is not installed (.ci/run installs it)`);
      const direct = start(client.argv(), { traced: false, env: client.env() });
      const traced = start(client.argv(), { env: client.env() });
      const [directCode, tracedCode] = await Promise.all([direct.exited, traced.exited]);
      expect(directCode).toBe(0);
      expect(direct.stdout()).toBe(`GET /get \nPOST /post ${client.body}\n`);
      expect(tracedCode).toBe(0);
      expect(traced.stdout()).toBe(direct.stdout());
      const events = await traced.waitForEvents(2, outbound);
      const seen = events
        .map((e) => [
          e.tags.tls,
          e.http_req_method,
          e.http_req_path,
          e.http_resp_status_code,
          text(e.http_req_body),
          text(e.http_resp_body),
        ])
        .sort((a, b) => String(a[1]).localeCompare(String(b[1])));
      expect(seen).toEqual([
        ["decrypted", "GET", "/get", 200, "", "GET /get \n"],
        ["decrypted", "POST", "/post", 200, client.body, `POST /post ${client.body}\n`],
      ]);
      expect(traced.stderr()).toContain("TLS: ");
      expect(traced.stderr()).not.toContain("not decrypted");
    }, 60_000);
  }
});
