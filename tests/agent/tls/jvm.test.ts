import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, linkSync, mkdirSync, readdirSync, realpathSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Server } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { hasCommand, ROOT, scratchDir, start } from "../harness.ts";
import { makeCa, makeLeaf } from "../tls-pki.ts";

/**
 * Real JVMs under `tapscope run`, trusting a company CA the ways Java programs do: the JDK's own cacerts with the CA
 * imported, or a trust store (PKCS#12, JKS) named by -D on the command line, JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS or
 * _JAVA_OPTIONS, set by whoever started tapscope or by a wrapper inside the traced tree. Each call is decrypted, and
 * the program's stdout and stderr are exactly its untraced ones: no "Picked up JAVA_TOOL_OPTIONS" of tapscope's. A
 * wrong password and a missing store give the JVM's own error, traced as untraced.
 */
let scratch: ReturnType<typeof scratchDir>;
let server: Server<undefined>;
let base = "";
let classes = "";
/** A JDK of our own (linked to the installed one) whose cacerts holds the company CA. */
let privateJava = "";
const PASSWORD = "company-secret";
const JARS = ["httpclient", "httpcore", "commons-logging", "commons-codec"].map((name) => `/usr/share/java/${name}.jar`);
const FIXTURES = [join(ROOT, "tests/agent/fixtures/tls-clients/Client.java"), join(ROOT, "tests/agent/fixtures/jvm-clients")];

function run(argv: string[]): string {
  const out = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (out.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${out.stdout}${out.stderr}`);
  return out.stdout.toString();
}

/**
 * The installed JDK, seen from another java.home: its files linked, the launcher and libjvm hard-linked (or copied:
 * the JVM finds its home from their real paths), and a cacerts of its own.
 */
function linkedJdk(into: string): string {
  const home = dirname(dirname(realpathSync(Bun.which("java")!)));
  const own = (from: string, to: string) => {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  };
  const mirror = (from: string, to: string, keep: (name: string) => "link" | "own" | "dir" | "skip") => {
    mkdirSync(to, { recursive: true });
    for (const name of readdirSync(from)) {
      const what = keep(name);
      if (what === "link") symlinkSync(join(from, name), join(to, name));
      else if (what === "own") own(join(from, name), join(to, name));
    }
  };
  mirror(home, into, (name) => (name === "bin" || name === "lib" ? "skip" : "link"));
  mirror(join(home, "bin"), join(into, "bin"), (name) => (name === "java" ? "own" : "link"));
  mirror(join(home, "lib"), join(into, "lib"), (name) => (name === "server" || name === "security" ? "skip" : "link"));
  mirror(join(home, "lib/server"), join(into, "lib/server"), (name) => (name === "libjvm.so" ? "own" : "link"));
  mirror(join(home, "lib/security"), join(into, "lib/security"), (name) => (name === "cacerts" ? "skip" : "link"));
  copyFileSync(realpathSync(join(home, "lib/security/cacerts")), join(into, "lib/security/cacerts"));
  return join(into, "bin/java");
}

beforeAll(() => {
  for (const need of ["java", "javac", "keytool"]) {
    if (!hasCommand(need)) throw new Error(`${need} is not installed (.ci/run installs default-jdk-headless)`);
  }
  for (const jar of JARS) {
    if (!Bun.file(jar).size) throw new Error(`${jar} is missing (.ci/run installs libhttpclient-java)`);
  }
  scratch = scratchDir("tapscope-tls-jvm-");
  makeCa(scratch.dir, "company");
  const leaf = makeLeaf(scratch.dir, "company", "leaf", ["DNS:localhost", "IP:127.0.0.1"]);
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: leaf.cert, key: leaf.key },
    async fetch(req) {
      return new Response(`${req.method} ${new URL(req.url).pathname} ${await req.text()}\n`, {
        headers: { "content-type": "text/plain" },
      });
    },
  });
  base = `https://localhost:${server.port}`;
  const ca = join(scratch.dir, "company.crt");
  const importCa = (store: string, type: string, password = PASSWORD) =>
    run([
      "keytool",
      "-importcert",
      "-noprompt",
      "-alias",
      "company",
      "-file",
      ca,
      "-keystore",
      store,
      "-storetype",
      type,
      "-storepass",
      password,
    ]);
  importCa(join(scratch.dir, "company.p12"), "PKCS12");
  importCa(join(scratch.dir, "company.jks"), "JKS");
  privateJava = linkedJdk(join(scratch.dir, "jdk"));
  // Debian's cacerts is a JKS store with the password changeit; the company CA joins the public ones there.
  importCa(join(scratch.dir, "jdk/lib/security/cacerts"), "JKS", "changeit");
  classes = join(scratch.dir, "classes");
  const sources = [FIXTURES[0]!, ...readdirSync(FIXTURES[1]!).map((name) => join(FIXTURES[1]!, name))];
  run(["javac", "-d", classes, "-cp", JARS.join(":"), ...sources]);
}, 180_000);

afterAll(() => {
  server?.stop(true);
  scratch?.cleanup();
});

const outbound = (e: TracedEvent) => e.http_is_outgoing;
const text = (b64: string) => Buffer.from(b64, "base64").toString();
const ours = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => !line.startsWith("tapscope: "))
    .join("\n");
/** An exception's messages without its stack frames (a handshake's frames name whichever thread ran it). */
const messages = (stderr: string) =>
  ours(stderr)
    .split("\n")
    .filter((line) => line !== "" && !/^\s+(at |\.\.\. )/.test(line));

type Way = { name: string; java: () => string; env: () => Record<string, string>; argv: (main: string[]) => string[] };

const p12 = () => join(scratch.dir, "company.p12");
const jks = () => join(scratch.dir, "company.jks");
const storeOptions = (store: string, type: string) =>
  `-Djavax.net.ssl.trustStore=${store} -Djavax.net.ssl.trustStoreType=${type} -Djavax.net.ssl.trustStorePassword=${PASSWORD}`;
const classpath = () => [classes, ...JARS].join(":");
// commons-logging would otherwise print log4j's warnings (the same traced and untraced, but noise).
const QUIET = "-Dorg.apache.commons.logging.Log=org.apache.commons.logging.impl.NoOpLog";

const ways: Way[] = [
  {
    name: "no store named: the JDK's cacerts with the company CA imported",
    java: () => privateJava,
    env: () => ({}),
    argv: (main) => [privateJava, QUIET, "-cp", classpath(), ...main],
  },
  {
    name: "JAVA_TOOL_OPTIONS set by tapscope's caller (PKCS#12)",
    java: () => "java",
    env: () => ({ JAVA_TOOL_OPTIONS: storeOptions(p12(), "PKCS12") }),
    argv: (main) => ["java", QUIET, "-cp", classpath(), ...main],
  },
  {
    name: "JAVA_TOOL_OPTIONS set by an env wrapper inside the traced tree (JKS)",
    java: () => "java",
    env: () => ({}),
    argv: (main) => ["env", `JAVA_TOOL_OPTIONS=${storeOptions(jks(), "JKS")}`, "java", QUIET, "-cp", classpath(), ...main],
  },
  {
    name: "JDK_JAVA_OPTIONS (PKCS#12)",
    java: () => "java",
    env: () => ({ JDK_JAVA_OPTIONS: storeOptions(p12(), "PKCS12") }),
    argv: (main) => ["java", QUIET, "-cp", classpath(), ...main],
  },
  {
    name: "_JAVA_OPTIONS exported by a shell script (JKS, type left to the JVM)",
    java: () => "java",
    env: () => ({}),
    argv: (main) => [
      "sh",
      "-c",
      `export _JAVA_OPTIONS="-Djavax.net.ssl.trustStore=${jks()} -Djavax.net.ssl.trustStorePassword=${PASSWORD}"; exec java ${QUIET} -cp ${classpath()} ${main.join(" ")}`,
    ],
  },
  {
    name: "-D on the command line (PKCS#12)",
    java: () => "java",
    env: () => ({}),
    argv: (main) => ["java", ...storeOptions(p12(), "PKCS12").split(" "), QUIET, "-cp", classpath(), ...main],
  },
];

const clients = [
  { name: "JDK HttpClient", main: () => ["Client", base, "default"] },
  { name: "HttpsURLConnection", main: () => ["UrlClient", base] },
  { name: "Apache HttpClient 4.5", main: () => ["ApacheClient", base] },
];

async function both(argv: string[], env: Record<string, string>) {
  const direct = start(argv, { traced: false, env });
  const traced = start(argv, { env });
  const [directCode, tracedCode] = await Promise.all([direct.exited, traced.exited]);
  return { direct, traced, directCode, tracedCode };
}

describe("JVMs trusting a company CA: decrypted, and output identical to untraced", () => {
  // Every way with the JDK's own client; the first two ways with the other clients as well.
  const cases = [
    ...ways.map((way) => ({ way, client: clients[0]! })),
    ...clients.slice(1).flatMap((client) => ways.slice(0, 2).map((way) => ({ way, client }))),
  ];
  for (const { way, client } of cases) {
    test(`${client.name}, ${way.name}`, async () => {
      const { direct, traced, directCode, tracedCode } = await both(way.argv(client.main()), way.env());
      expect([directCode, direct.stdout()]).toEqual([0, "GET /get \nPOST /post hello from java\n"]);
      expect(tracedCode).toBe(0);
      expect(traced.stdout()).toBe(direct.stdout());
      expect(ours(traced.stderr())).toBe(direct.stderr());
      expect(traced.stderr()).not.toContain("-Djavax.net.ssl.trustStore=/tmp/tapscope-trust");
      const events = await traced.waitForEvents(2, outbound);
      expect(
        events
          .map((e) => [e.tags.tls, e.http_req_method, e.http_req_path, e.http_resp_status_code, text(e.http_resp_body)])
          .sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
      ).toEqual([
        ["decrypted", "GET", "/get", 200, "GET /get \n"],
        ["decrypted", "POST", "/post", 200, "POST /post hello from java\n"],
      ]);
      expect(traced.stderr()).not.toContain("not decrypted");
    }, 90_000);
  }
});

describe("JVMs whose trust store cannot be used: the JVM's own error, traced as untraced", () => {
  test("a TrustManager made in code (from a PEM file of its own): passed through with its reason, output untouched", async () => {
    // The program trusts the company CA only in code; the JVM's stores never name it, so tapscope cannot verify for it.
    const env = { SSL_CERT_FILE: join(scratch.dir, "company.crt") };
    const { direct, traced, directCode, tracedCode } = await both(["java", "-cp", classes, "Client", base, "pem"], env);
    expect([directCode, tracedCode]).toEqual([0, 0]);
    expect(traced.stdout()).toBe(direct.stdout());
    expect(ours(traced.stderr())).toBe(direct.stderr());
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.tags.tls, e!.tags.tls_reason]).toEqual(["not decrypted", "upstream certificate not trusted"]);
  }, 90_000);

  test("a wrong password: the same exception, said by tapscope, nothing decrypted or guessed", async () => {
    const env = { JAVA_TOOL_OPTIONS: `-Djavax.net.ssl.trustStore=${p12()} -Djavax.net.ssl.trustStorePassword=wrong` };
    const { direct, traced, directCode, tracedCode } = await both(["java", "-cp", classes, "Client", base, "default"], env);
    expect(directCode).not.toBe(0);
    expect(tracedCode).toBe(directCode);
    expect(traced.stdout()).toBe(direct.stdout());
    expect(messages(traced.stderr())).toEqual(messages(direct.stderr()));
    expect(messages(direct.stderr()).join("\n")).toContain("problem accessing trust store");
    expect(traced.stderr()).toContain(`tapscope: TLS: java (pid`);
    expect(traced.stderr()).toContain(`its trust store ${p12()} could not be read (the password is wrong`);
  }, 90_000);

  test("a missing store: the JVM falls back to its cacerts (without the company CA) and refuses the server, traced as untraced", async () => {
    const env = { JAVA_TOOL_OPTIONS: `-Djavax.net.ssl.trustStore=${join(scratch.dir, "missing.p12")}` };
    const { direct, traced, directCode, tracedCode } = await both(["java", "-cp", classes, "Client", base, "default"], env);
    expect(directCode).not.toBe(0);
    expect(tracedCode).toBe(directCode);
    expect(messages(traced.stderr())).toEqual(messages(direct.stderr()));
    expect(messages(direct.stderr()).join("\n")).toContain("PKIX path building failed");
    const [e] = await traced.waitForEvents(1, outbound);
    expect([e!.tags.tls, e!.tags.tls_reason]).toEqual(["not decrypted", "upstream certificate not trusted"]);
  }, 90_000);
});
