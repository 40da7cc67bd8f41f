import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import type { Server } from "bun";
import { type CertificateAuthority, createAuthority, type TlsCredentials, trustStoreP12 } from "~/agent/tls/authority.ts";

/** The run's CA: real TLS clients (Bun fetch, node:https, openssl, a JVM) trust its leaves and nothing else. */
let authority: CertificateAuthority;
let leaf: TlsCredentials;
let ipLeaf: TlsCredentials;
let server: Server<undefined>;
let ipServer: Server<undefined>;
let dir: string;

const NAME = "api.example.test";
const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

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

describe("PKCS#12 trust store", () => {
  const hasKeytool = Bun.which("keytool") !== null;
  const hasJdk = Bun.which("javac") !== null && Bun.which("java") !== null;

  test("rejects input without certificates", async () => {
    await expect(trustStoreP12(["not a pem"], "changeit")).rejects.toThrow(/no certificates/);
    const garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    await expect(trustStoreP12([authority.caPem(), garbage], "changeit")).rejects.toThrow(
      /certificate 2 of the PEM input is not a valid X.509/,
    );
  });

  test.skipIf(!hasKeytool)("keytool lists every certificate as a trusted entry, bundles included", async () => {
    const second = await createAuthority();
    const third = await createAuthority();
    const store = await trustStoreP12([authority.caPem(), second.caPem() + third.caPem()], "changeit");
    const path = write("list.p12", store);
    const out = Bun.spawnSync(["keytool", "-list", "-keystore", path, "-storetype", "PKCS12", "-storepass", "changeit"]);
    const text = out.stdout.toString();
    expect(out.exitCode).toBe(0);
    expect(text).toContain("Your keystore contains 3 entries");
    expect(text.match(/trustedCertEntry/g)?.length).toBe(3);
    expect(text).toContain("tapscope-0, ");
    const wrongPassword = Bun.spawnSync(["keytool", "-list", "-keystore", path, "-storetype", "PKCS12", "-storepass", "wrong"]);
    expect(wrongPassword.exitCode).not.toBe(0);
  });

  // Without a JDK this cannot be checked; the skip says so in the test name.
  test.skipIf(!hasJdk)(
    "a JVM given the store through javax.net.ssl.trustStore connects to the Bun TLS server (needs a JDK)",
    async () => {
      const source = write(
        "TlsProbe.java",
        `import javax.net.ssl.*;
import java.io.*;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

public class TlsProbe {
  public static void main(String[] args) throws Exception {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    Socket plain = new Socket("127.0.0.1", port);
    SSLSocket socket = (SSLSocket) ((SSLSocketFactory) SSLSocketFactory.getDefault()).createSocket(plain, host, port, true);
    SSLParameters params = socket.getSSLParameters();
    params.setEndpointIdentificationAlgorithm("HTTPS");
    socket.setSSLParameters(params);
    OutputStream out = socket.getOutputStream();
    out.write(("GET /java HTTP/1.1\\r\\nHost: " + host + "\\r\\nConnection: close\\r\\n\\r\\n").getBytes(StandardCharsets.US_ASCII));
    out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
    String status = in.readLine();
    String line;
    String last = "";
    while ((line = in.readLine()) != null) last = line;
    System.out.println(status + " | " + last);
    socket.close();
  }
}
`,
      );
      const javac = Bun.spawnSync(["javac", "-d", dir, source]);
      expect(javac.stderr.toString()).toBe("");
      // Merged with the system roots where there are some, as a run gives it to the JVM.
      const systemBundle = existsSync(SYSTEM_BUNDLE) ? readFileSync(SYSTEM_BUNDLE, "utf8") : "";
      const storePath = write("jvm.p12", await trustStoreP12([authority.caPem(), systemBundle], "s3cret"));
      // Asynchronous: the TLS server answering the JVM runs on this same event loop.
      const java = async (extra: string[], name: string) => {
        const child = Bun.spawn(["java", ...extra, "-cp", dir, "TlsProbe", name, String(server.port)], { stdout: "pipe", stderr: "pipe" });
        const [stdout, stderr, exitCode] = await Promise.all([
          new Response(child.stdout).text(),
          new Response(child.stderr).text(),
          child.exited,
        ]);
        return { stdout, stderr, exitCode };
      };
      const trustStore = [
        `-Djavax.net.ssl.trustStore=${storePath}`,
        "-Djavax.net.ssl.trustStoreType=PKCS12",
        "-Djavax.net.ssl.trustStorePassword=s3cret",
      ];
      const ok = await java(trustStore, NAME);
      expect(ok.stderr.toString()).not.toContain("Exception");
      expect(ok.stdout.toString().trim()).toBe("HTTP/1.1 200 OK | hello /java");
      const wrongName = await java(trustStore, "other.example.test");
      expect(wrongName.exitCode).not.toBe(0);
      expect(wrongName.stderr).toContain("No subject alternative DNS name matching other.example.test");
      const defaultStore = await java([], NAME);
      expect(defaultStore.exitCode).not.toBe(0);
      expect(defaultStore.stderr).toContain("PKIX path building failed");
    },
    60_000,
  );
});
