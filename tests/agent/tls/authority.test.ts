import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import type { Server } from "bun";
import { type CertificateAuthority, createAuthority, type TlsCredentials } from "~/agent/tls/authority.ts";

/** The run's CA: real TLS clients (Bun fetch, node:https, openssl) trust its leaves and nothing else. */
let authority: CertificateAuthority;
let leaf: TlsCredentials;
let ipLeaf: TlsCredentials;
let server: Server<undefined>;
let ipServer: Server<undefined>;
let dir: string;

const NAME = "api.example.test";

beforeAll(async () => {
  authority = await createAuthority();
  leaf = await authority.leafFor(NAME);
  ipLeaf = await authority.leafFor("127.0.0.1");
  const fetchHandler = (req: Request) => new Response(`hello ${new URL(req.url).pathname}`);
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: leaf, fetch: fetchHandler });
  ipServer = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: ipLeaf, fetch: fetchHandler });
  dir = mkdtempSync(join(tmpdir(), "tapscope-ca-test-"));
});

afterAll(() => {
  server.stop(true);
  ipServer.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

function nodeGet(port: number, servername: string, ca: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: "127.0.0.1", port, path: "/node", servername, ca }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve(body));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

function write(name: string, content: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe("certificates", () => {
  test("the CA is a P-256 CA valid from a little before now to the run's end plus a day", async () => {
    const runEndsBy = new Date(Date.now() + 3 * 3_600_000);
    const ca = await createAuthority({ runEndsBy });
    const cert = new X509Certificate(ca.caPem());
    expect(cert.ca).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(new Date(cert.validFrom).getTime()).toBeLessThan(Date.now());
    expect(new Date(cert.validTo).getTime()).toBe(Math.floor((runEndsBy.getTime() + 86_400_000) / 1000) * 1000);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(ca.notAfter.getTime()).toBe(runEndsBy.getTime() + 86_400_000);
  });

  test("each run gets its own CA", async () => {
    const other = await createAuthority();
    expect(other.caPem()).not.toBe(authority.caPem());
  });

  test("a leaf names its server in the SAN, is signed by the CA and lives within the CA's validity", () => {
    const [leafPem, caPem] = leaf.cert.split(/(?<=-----END CERTIFICATE-----\n)/);
    expect(caPem).toBe(authority.caPem());
    const cert = new X509Certificate(leafPem ?? "");
    const ca = new X509Certificate(authority.caPem());
    expect(cert.ca).toBe(false);
    expect(cert.subjectAltName).toBe(`DNS:${NAME}`);
    expect(cert.checkHost(NAME)).toBe(NAME);
    expect(cert.checkHost("other.example.test")).toBeUndefined();
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(new Date(cert.validFrom).getTime()).toBeGreaterThanOrEqual(new Date(ca.validFrom).getTime());
    expect(new Date(cert.validTo).getTime()).toBeLessThanOrEqual(new Date(ca.validTo).getTime());
    expect(leaf.key).toStartWith("-----BEGIN PRIVATE KEY-----\n");
  });

  test("an IP address gets an iPAddress SAN, IPv4 and IPv6", async () => {
    expect(new X509Certificate(ipLeaf.cert).subjectAltName).toBe("IP Address:127.0.0.1");
    const v6 = new X509Certificate((await authority.leafFor("[::1]")).cert);
    expect(v6.subjectAltName).toBe("IP Address:0:0:0:0:0:0:0:1");
    expect(v6.checkIP("::1")).toBe("::1");
    const mapped = new X509Certificate((await authority.leafFor("2001:db8::ffff:192.0.2.1")).cert);
    expect(mapped.checkIP("2001:db8::ffff:c000:201")).toBe("2001:db8::ffff:c000:201");
  });

  test("more names (a peer certificate's, for a client that sent no server name): each in the SAN, wildcards too, the rest left out", async () => {
    const both = new X509Certificate((await authority.leafFor("127.0.0.1", ["localhost", "*.svc.test", "127.0.0.1", "not a name!"])).cert);
    expect(both.subjectAltName).toBe("IP Address:127.0.0.1, DNS:localhost, DNS:*.svc.test");
    expect(both.checkHost("localhost")).toBe("localhost");
    expect(both.checkHost("api.svc.test")).toBe("*.svc.test");
    expect(both.checkHost("other.test")).toBeUndefined();
    expect((await authority.leafFor("127.0.0.1", ["localhost"])).cert).not.toBe(ipLeaf.cert);
  });

  test("leaves are cached per server name, spelled any way", async () => {
    expect((await authority.leafFor("API.Example.Test.")).cert).toBe(leaf.cert);
    expect((await authority.leafFor("0:0::1")).cert).toBe((await authority.leafFor("::1")).cert);
    expect((await authority.leafFor("other.example.test")).cert).not.toBe(leaf.cert);
  });

  test("the cache is bounded: the least recently used leaf is dropped", async () => {
    const ca = await createAuthority({ cacheSize: 2 });
    const a = await ca.leafFor("a.test");
    const b = await ca.leafFor("b.test");
    expect((await ca.leafFor("a.test")).cert).toBe(a.cert);
    await ca.leafFor("c.test");
    expect((await ca.leafFor("a.test")).cert).toBe(a.cert);
    expect((await ca.leafFor("b.test")).cert).not.toBe(b.cert);
  });

  test("a leaf about to expire is minted again; past the CA's end none is minted", async () => {
    let now = Date.now();
    const ca = await createAuthority({ runEndsBy: new Date(now + 10 * 86_400_000), now: () => new Date(now) });
    const first = await ca.leafFor("renew.test");
    now += 47 * 3_600_000;
    const second = await ca.leafFor("renew.test");
    expect(second.cert).not.toBe(first.cert);
    expect(new Date(new X509Certificate(second.cert).validTo).getTime()).toBeGreaterThan(now);
    now += 12 * 86_400_000;
    await expect(ca.leafFor("renew.test")).rejects.toThrow(/CA expired/);
  });

  test("names that are neither DNS names nor IP addresses are refused", async () => {
    for (const bad of ["", "a..b", "bad name.test", "x".repeat(64), "*.example.test", "evil\u0000.test", "a/b"])
      await expect(authority.leafFor(bad)).rejects.toThrow(/not a DNS name or IP address/);
  });

  test("a long name gets no common name, only a critical SAN", async () => {
    const longName = `${"a".repeat(60)}.${"b".repeat(60)}.test`;
    const cert = new X509Certificate((await authority.leafFor(longName)).cert);
    expect(cert.subject ?? "").toBe("");
    expect(cert.checkHost(longName)).toBe(longName);
  });

  test("minting takes a few milliseconds at most per leaf", async () => {
    const ca = await createAuthority();
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const start = performance.now();
      await ca.leafFor(`host-${i}.bench.test`);
      times.push(performance.now() - start);
    }
    const cachedStart = performance.now();
    for (let i = 0; i < 200; i++) await ca.leafFor(`host-${i}.bench.test`);
    const cachedMs = (performance.now() - cachedStart) / 200;
    times.sort((a, b) => a - b);
    const p50 = times[100] ?? 0;
    const p99 = times[198] ?? 0;
    console.log(`leaf minting: p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms; cached ${(cachedMs * 1000).toFixed(1)} µs`);
    expect(p50).toBeLessThan(20);
  });
});

describe("real TLS clients", () => {
  test("Bun fetch trusting only the CA reaches the server by name, and fails for another name", async () => {
    const url = `https://127.0.0.1:${server.port}/fetch`;
    const res = await fetch(url, { tls: { ca: authority.caPem(), serverName: NAME } });
    expect(await res.text()).toBe("hello /fetch");
    await expect(fetch(url, { tls: { ca: authority.caPem(), serverName: "other.example.test" } })).rejects.toThrow();
  });

  test("Bun fetch without the CA rejects the leaf", async () => {
    await expect(fetch(`https://127.0.0.1:${server.port}/`, { tls: { serverName: NAME } })).rejects.toThrow();
  });

  test("node:https trusting only the CA succeeds for the name and fails for another", async () => {
    expect(await nodeGet(server.port ?? 0, NAME, authority.caPem())).toBe("hello /node");
    await expect(nodeGet(server.port ?? 0, "other.example.test", authority.caPem())).rejects.toThrow(/altnames|Hostname/i);
    const stranger = await createAuthority();
    await expect(nodeGet(server.port ?? 0, NAME, stranger.caPem())).rejects.toThrow();
  });

  test("a Bun.listen TLS socket (what a relay terminates with) serves the leaf to node:tls", async () => {
    const listener = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      tls: leaf,
      socket: {
        data(socket, data) {
          socket.end(`echo ${data.toString()}`);
        },
      },
    });
    try {
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = tls.connect({ host: "127.0.0.1", port: listener.port, servername: NAME, ca: authority.caPem() }, () => {
          socket.write("ping");
        });
        let text = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => {
          text += chunk;
        });
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
      expect(reply).toBe("echo ping");
    } finally {
      listener.stop(true);
    }
  });

  test("an IP leaf serves https://127.0.0.1", async () => {
    const res = await fetch(`https://127.0.0.1:${ipServer.port}/ip`, { tls: { ca: authority.caPem() } });
    expect(await res.text()).toBe("hello /ip");
  });

  test("openssl verify accepts the leaves against the CA", () => {
    const caFile = write("ca.pem", authority.caPem());
    const leafFile = write("leaf.pem", leaf.cert.split(/(?<=-----END CERTIFICATE-----\n)/)[0] ?? "");
    const ipFile = write("ip.pem", ipLeaf.cert.split(/(?<=-----END CERTIFICATE-----\n)/)[0] ?? "");
    const ok = Bun.spawnSync(["openssl", "verify", "-CAfile", caFile, "-purpose", "sslserver", "-verify_hostname", NAME, leafFile]);
    expect(ok.stdout.toString()).toContain(": OK");
    const ip = Bun.spawnSync(["openssl", "verify", "-CAfile", caFile, "-purpose", "sslserver", "-verify_ip", "127.0.0.1", ipFile]);
    expect(ip.stdout.toString()).toContain(": OK");
    const wrong = Bun.spawnSync(["openssl", "verify", "-CAfile", caFile, "-verify_hostname", "other.example.test", leafFile]);
    expect(wrong.exitCode).not.toBe(0);
  });
});
