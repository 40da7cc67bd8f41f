import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readJks } from "~/agent/tls/jks.ts";
import { readPkcs12 } from "~/agent/tls/pkcs12.ts";
import { ProcessTrust, type ProcessView, TRUST_STORE_UNREADABLE } from "~/agent/tls/process-trust.ts";
import { offeredTrust, pemCertificates } from "~/agent/tls/trust.ts";
import {
  environValues,
  javaOptionWords,
  javaSystemProperties,
  launcherOptions,
  namedTrustPaths,
  parseEnviron,
} from "~/agent/tls/trust-paths.ts";
import { hasCommand, scratchDir } from "../harness.ts";
import { makeCa } from "../tls-pki.ts";

/**
 * Each process's own trust, from its exec'd environment and command line: what its peers are verified against and
 * which of its opens get merged trust. Processes are described through the test seam (their /proc view).
 */
let scratch: ReturnType<typeof scratchDir>;
let base: string[];
let systemFile: string;
let company: string;
let companyFile: string;
let runCaPem: string;
let home: string;
let offered: ReturnType<typeof offeredTrust>;
const PASSWORD = "s3cret-store";
const said: string[] = [];
const processes = new Map<number, ProcessView>();

function trust(runEnv: Record<string, string> = {}, basePems = base): ProcessTrust {
  return new ProcessTrust({
    caPem: runCaPem,
    runEnv,
    basePems,
    offered,
    systemBundles: [systemFile],
    say: (line) => said.push(line),
    readProcess: (pid) => processes.get(pid) ?? null,
  });
}

const jvm = (pid: number, env: Record<string, string>, argv: string[] = ["java", "Main"], cwd = scratch.dir) =>
  processes.set(pid, { env, argv, exe: join(home, "bin/java"), cwd });
const native = (pid: number, env: Record<string, string>) =>
  processes.set(pid, { env, argv: ["curl"], exe: "/usr/bin/curl", cwd: scratch.dir });

function keytool(args: string[]): void {
  const out = Bun.spawnSync(["keytool", ...args], { stdout: "pipe", stderr: "pipe" });
  if (out.exitCode !== 0) throw new Error(`keytool failed: ${out.stdout}${out.stderr}`);
}

beforeAll(() => {
  if (!hasCommand("keytool")) throw new Error("keytool is not installed (.ci/run installs default-jdk-headless)");
  scratch = scratchDir("tapscope-process-trust-");
  base = pemCertificates(makeCa(scratch.dir, "system").cert);
  systemFile = join(scratch.dir, "system.pem");
  writeFileSync(systemFile, base.join(""));
  company = makeCa(scratch.dir, "company").cert;
  companyFile = join(scratch.dir, "company.crt");
  runCaPem = makeCa(scratch.dir, "run").cert;
  offered = offeredTrust({ env: {}, programPems: base, caPem: runCaPem });
  home = join(scratch.dir, "jdk");
  mkdirSync(join(home, "lib/security"), { recursive: true });
  const importInto = (store: string, type: string) =>
    keytool([
      "-importcert",
      "-noprompt",
      "-alias",
      "company",
      "-file",
      companyFile,
      "-keystore",
      store,
      "-storetype",
      type,
      "-storepass",
      PASSWORD,
    ]);
  importInto(join(home, "lib/security/cacerts"), "JKS");
  importInto(join(scratch.dir, "app.p12"), "PKCS12");
  copyFileSync(join(scratch.dir, "app.p12"), join(scratch.dir, "relative.p12"));
}, 60_000);
afterAll(() => {
  offered?.cleanup();
  scratch?.cleanup();
});

describe("JVM options", () => {
  test("words with quotes; launcher options stop at the main class, -jar or -m; later settings win", () => {
    expect(javaOptionWords(` -Da=1  "-Db=two words" '-Dc=x"y' -Dd= `)).toEqual(["-Da=1", "-Db=two words", '-Dc=x"y', "-Dd="]);
    expect(launcherOptions(["java", "-cp", "-Dnot=this", "-Dyes=1", "Main", "-Dprogram=arg"])).toEqual(["-cp", "-Dyes=1"]);
    expect(launcherOptions(["java", "-Da=1", "-jar", "app.jar", "-Db=2"])).toEqual(["-Da=1"]);
    const props = javaSystemProperties(
      { JAVA_TOOL_OPTIONS: "-Dk=tool -Dt=tool", JDK_JAVA_OPTIONS: "-Dk=jdk -Dj=jdk", _JAVA_OPTIONS: "-Do=override" },
      ["java", "-Dk=cli", "-Do=cli", "Main", "-Dk=program"],
    );
    expect(Object.fromEntries(props)).toEqual({ k: "cli", t: "tool", j: "jdk", o: "override" });
  });

  test("the variables that matter, read from /proc's environ text (the first of a name, as getenv finds it)", () => {
    const text = "A=1\0XSSL_CERT_FILE=/not-this\0SSL_CERT_FILE=/first\0SSL_CERT_FILE=/second\0JAVA_TOOL_OPTIONS=-Da=b c";
    expect(environValues(text, ["SSL_CERT_FILE", "JAVA_TOOL_OPTIONS", "A", "MISSING"])).toEqual({
      SSL_CERT_FILE: "/first",
      JAVA_TOOL_OPTIONS: "-Da=b c",
      A: "1",
    });
    expect(parseEnviron(text).SSL_CERT_FILE).toBe("/first");
  });

  test("the files a process's environment names, for the Worker to watch", () => {
    expect(
      namedTrustPaths({ NODE_EXTRA_CA_CERTS: "/a.pem", CURL_CA_BUNDLE: "/b.pem", JAVA_TOOL_OPTIONS: "-Djavax.net.ssl.trustStore=/c.p12" }, [
        "node",
      ]),
    ).toEqual(["/b.pem", "/a.pem", "/c.p12"]);
  });
});

describe("native processes", () => {
  test("the run's own environment: its roots, and the bundle paths answered with the run's merged bundle", () => {
    native(101, { ...offered.env, PATH: "/usr/bin" });
    const t = trust();
    expect(t.profileFor(101).pems).toBe(base);
    expect(t.answerOpen(101, "/etc/ssl/certs/ca-certificates.crt")).toBe(offered.bundleFile);
    expect(t.answerOpen(101, companyFile)).toBeNull();
    expect(t.profileFor(999).pems).toBe(base); // gone: the run's own
  });

  test("a CA file set inside the program's tree (an env wrapper) is trusted for that process and its open gets it plus the run's CA", () => {
    native(102, { ...offered.env, NODE_EXTRA_CA_CERTS: companyFile });
    const t = trust();
    const profile = t.profileFor(102);
    expect(profile.pems).toEqual([...base, ...pemCertificates(company)]);
    const answered = t.answerOpen(102, companyFile)!;
    expect(pemCertificates(readFileSync(answered, "utf8"))).toEqual([...pemCertificates(company), ...pemCertificates(runCaPem)]);
    expect(pemCertificates(readFileSync(t.answerOpen(102, "/etc/ssl/certs/ca-certificates.crt")!, "utf8"))).toEqual([
      ...base,
      ...pemCertificates(company),
      ...pemCertificates(runCaPem),
    ]);
    // Another process without that variable is not answered for that file.
    expect(t.answerOpen(101, companyFile)).toBeNull();
    expect(t.profileFor(102)).toBe(profile);
  });

  test("a variable still pointing at the run's file stands for the user's own setting, not for the run's CA", () => {
    // The user ran `SSL_CERT_FILE=company.crt tapscope run`; inside, a wrapper adds NODE_EXTRA_CA_CERTS.
    const other = makeCa(scratch.dir, "other").cert;
    const otherFile = join(scratch.dir, "other.crt");
    const t = trust({ SSL_CERT_FILE: companyFile }, [...base, ...pemCertificates(company)]);
    native(103, { SSL_CERT_FILE: offered.bundleFile, NODE_EXTRA_CA_CERTS: otherFile });
    expect(t.profileFor(103).pems).toEqual([...base, ...pemCertificates(company), ...pemCertificates(other)]);
    native(104, { SSL_CERT_FILE: offered.bundleFile });
    expect(t.profileFor(104).pems).toEqual([...base, ...pemCertificates(company)]);
  });
});

describe("JVMs", () => {
  test("no trust store named: the JDK's cacerts (a private CA imported) is what peers are verified against, and its open is answered merged", () => {
    jvm(201, {});
    const t = trust();
    const profile = t.profileFor(201);
    expect(profile.pems).toEqual(pemCertificates(company));
    const cacerts = join(home, "lib/security/cacerts");
    const merged = t.answerOpen(201, cacerts)!;
    expect(readJks(new Uint8Array(readFileSync(merged)), null).trusted.length).toBe(2);
    expect(t.answerOpen(201, "/etc/ssl/certs/ca-certificates.crt")).toBeNull();
  });

  test("a store named on the command line or in a JVM variable, read with its password; merged under the same password", () => {
    const store = join(scratch.dir, "app.p12");
    const password = `-Djavax.net.ssl.trustStorePassword=${PASSWORD}`;
    const cases: Array<[Record<string, string>, string[]]> = [
      [{ JAVA_TOOL_OPTIONS: `-Djavax.net.ssl.trustStore=${store} ${password}` }, ["java", "Main"]],
      [{ JDK_JAVA_OPTIONS: `-Djavax.net.ssl.trustStore=${store} ${password}` }, ["java", "Main"]],
      [{ _JAVA_OPTIONS: `-Djavax.net.ssl.trustStore=${store} ${password}` }, ["java", "Main"]],
      [{}, ["java", `-Djavax.net.ssl.trustStore=${store}`, password, "-jar", "app.jar"]],
    ];
    let pid = 300;
    for (const [env, argv] of cases) {
      jvm(++pid, env, argv);
      const t = trust();
      expect(t.profileFor(pid).pems).toEqual(pemCertificates(company));
      const merged = new Uint8Array(readFileSync(t.answerOpen(pid, store)!));
      expect(readPkcs12(merged, PASSWORD).trusted.length).toBe(2);
      expect(t.answerOpen(pid, join(home, "lib/security/cacerts"))).toBeNull();
    }
  });

  test("a relative store is the JVM's working directory's, answered for the path as the JVM opens it", () => {
    jvm(401, { JAVA_TOOL_OPTIONS: `-Djavax.net.ssl.trustStore=relative.p12 -Djavax.net.ssl.trustStorePassword=${PASSWORD}` });
    const t = trust();
    expect(t.profileFor(401).pems).toEqual(pemCertificates(company));
    expect(t.answerOpen(401, "relative.p12")).not.toBeNull();
  });

  test("a wrong password: not answered (the JVM meets its own error), said once, its connections pass through with the reason", () => {
    said.length = 0;
    const store = join(scratch.dir, "app.p12");
    jvm(501, { JAVA_TOOL_OPTIONS: `-Djavax.net.ssl.trustStore=${store} -Djavax.net.ssl.trustStorePassword=wrong` });
    const t = trust();
    expect(t.profileFor(501)).toMatchObject({ pems: null, reason: TRUST_STORE_UNREADABLE });
    expect(t.answerOpen(501, store)).toBeNull();
    t.profileFor(501);
    expect(said).toEqual([
      `TLS: java (pid 501): its trust store ${store} could not be read (the password is wrong or the store was altered (its integrity check failed)); its HTTPS passes through undecrypted`,
    ]);
  });

  test("a missing store: the JVM falls back to cacerts, and so does its trust here", () => {
    jvm(601, { JAVA_TOOL_OPTIONS: "-Djavax.net.ssl.trustStore=/nonexistent/store.p12" });
    const t = trust();
    expect(t.profileFor(601).pems).toEqual(pemCertificates(company));
    expect(t.answerOpen(601, join(home, "lib/security/cacerts"))).not.toBeNull();
    expect(t.answerOpen(601, "/nonexistent/store.p12")).toBeNull();
  });

  test("jssecacerts, when the JDK has one, is preferred to cacerts; a store of another kind is unreadable", () => {
    writeFileSync(join(home, "lib/security/jssecacerts"), "not a key store");
    jvm(701, {});
    const t = trust();
    expect(t.profileFor(701)).toMatchObject({ pems: null, reason: TRUST_STORE_UNREADABLE });
    expect(said.at(-1)).toContain("could not be read (neither JKS nor PKCS#12)");
  });
});
