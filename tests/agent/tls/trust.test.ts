import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { offeredTrust, pemCertificates, programTrust } from "~/agent/tls/trust.ts";
import { scratchDir, start } from "../harness.ts";
import { makeCa } from "../tls-pki.ts";

/** What the traced program trusts, and the merged trust it is offered (env, files, and opens of the bundle paths). */
let scratch: ReturnType<typeof scratchDir>;
let system: string;
let userCa: string;
let runCa: string;
let systemPems: string[];

beforeAll(() => {
  scratch = scratchDir("tapscope-trust-");
  const a = makeCa(scratch.dir, "sys-a").cert;
  const b = makeCa(scratch.dir, "sys-b").cert;
  system = join(scratch.dir, "system.pem");
  writeFileSync(system, `# a comment\n${a}\n${b}`);
  systemPems = pemCertificates(`${a}${b}`);
  userCa = join(scratch.dir, "user.pem");
  writeFileSync(userCa, makeCa(scratch.dir, "user").cert);
  runCa = makeCa(scratch.dir, "run").cert;
});
afterAll(() => scratch.cleanup());

describe("programTrust", () => {
  test("the first system bundle that exists, plus every CA file the environment names, deduplicated", () => {
    const trust = programTrust({ REQUESTS_CA_BUNDLE: userCa, SSL_CERT_FILE: system }, ["/nonexistent/a.pem", system]);
    expect(trust.systemBundle).toBe(system);
    expect(trust.pems).toEqual([...systemPems, ...pemCertificates(readFileSync(userCa, "utf8"))]);
    expect(trust.notes).toEqual([]);
  });

  test("no system bundle, an unreadable variable and a file of garbage: said in notes, nothing thrown", () => {
    const garbage = join(scratch.dir, "garbage.pem");
    writeFileSync(garbage, "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n");
    const trust = programTrust({ SSL_CERT_FILE: "/nonexistent/ca.pem", CURL_CA_BUNDLE: garbage, NODE_EXTRA_CA_CERTS: scratch.dir }, []);
    expect(trust.pems).toEqual([]);
    expect(trust.notes).toEqual([
      expect.stringContaining("no system CA bundle found"),
      "SSL_CERT_FILE=/nonexistent/ca.pem could not be read (ENOENT); it is left out",
      `CURL_CA_BUNDLE=${garbage} holds no PEM certificate; it is left out`,
      `NODE_EXTRA_CA_CERTS=${scratch.dir} could not be read (not a regular file); it is left out`,
    ]);
  });
});

describe("programTrust: SSL_CERT_DIR and files that could hold the run", () => {
  test("the certificates of every SSL_CERT_DIR directory (hashed names, .pem, .crt) are trusted too; an unlistable one is noted", () => {
    const dir = join(scratch.dir, "certdir");
    mkdirSync(dir);
    const a = makeCa(scratch.dir, "dir-a").cert;
    const b = makeCa(scratch.dir, "dir-b").cert;
    writeFileSync(join(dir, "0a1b2c3d.0"), a);
    writeFileSync(join(dir, "extra.crt"), b);
    writeFileSync(join(dir, "README"), makeCa(scratch.dir, "dir-ignored").cert);
    const trust = programTrust({ SSL_CERT_DIR: `${dir}:/nonexistent/dir` }, []);
    expect(trust.pems).toEqual([...pemCertificates(a), ...pemCertificates(b)]);
    expect(trust.notes).toContain("SSL_CERT_DIR=/nonexistent/dir could not be listed (ENOENT); it is left out");
  });

  test("a variable naming a FIFO is noted, not waited on", () => {
    const fifo = join(scratch.dir, "ca.fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const started = performance.now();
    const trust = programTrust({ SSL_CERT_FILE: fifo }, []);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(trust.notes).toContain(`SSL_CERT_FILE=${fifo} could not be read (not a regular file); it is left out`);
  });
});

describe("offeredTrust", () => {
  test("a private directory with the merged bundle and Node's extra file (kept and merged), nothing for Java, removed by cleanup", () => {
    const offered = offeredTrust({
      env: { NODE_EXTRA_CA_CERTS: userCa, PIP_CERT: "/etc/ssl/certs/ca-certificates.crt", JAVA_TOOL_OPTIONS: "-Xmx1g" },
      programPems: systemPems,
      caPem: runCa,
    });
    expect(statSync(offered.dir).mode & 0o777).toBe(0o700);
    const run = pemCertificates(runCa);
    expect(pemCertificates(readFileSync(offered.bundleFile, "utf8"))).toEqual([...systemPems, ...run]);
    for (const name of [
      "SSL_CERT_FILE",
      "REQUESTS_CA_BUNDLE",
      "CURL_CA_BUNDLE",
      "AWS_CA_BUNDLE",
      "GIT_SSL_CAINFO",
      "DENO_CERT",
      "PIP_CERT",
    ]) {
      expect(offered.env[name]).toBe(offered.bundleFile);
    }
    const nodeExtra = offered.env.NODE_EXTRA_CA_CERTS!;
    expect(pemCertificates(readFileSync(nodeExtra, "utf8"))).toEqual([...pemCertificates(readFileSync(userCa, "utf8")), ...run]);
    // A JVM is reached through its own trust store's open: no variable it would announce on stderr.
    expect(offered.env.JAVA_TOOL_OPTIONS).toBeUndefined();
    for (const file of [offered.bundleFile, nodeExtra]) expect(statSync(file).mode & 0o777).toBe(0o600);
    offered.cleanup();
    expect(existsSync(offered.dir)).toBe(false);
  });
});

describe("the bundle paths, opened by a traced program", () => {
  const count = "import ssl; print(len(ssl.create_default_context().get_ca_certs()))";
  const bundle = "/etc/ssl/certs/ca-certificates.crt";

  test("a program with no environment at all (env -i) still gets the merged bundle when it opens the system path", async () => {
    if (!existsSync(bundle)) throw new Error(`${bundle} is missing: install ca-certificates`);
    const systemCount = pemCertificates(readFileSync(bundle, "latin1")).length;
    const traced = start(["env", "-i", "/usr/bin/python3", "-c", count]);
    expect(await traced.exited).toBe(0);
    expect(Number(traced.stdout().trim())).toBe(systemCount + 1);
    const untraced = start(["env", "-i", "/usr/bin/python3", "-c", count], { traced: false });
    expect(await untraced.exited).toBe(0);
    expect(Number(untraced.stdout().trim())).toBe(systemCount);
  });

  test("other files, writes and --tls off are untouched", async () => {
    const out = join(scratch.dir, "written.txt");
    const script = `cat /etc/hostname > ${out} && cat ${out} && grep -c BEGIN ${bundle}`;
    const on = start(["sh", "-c", script]);
    const off = start(["sh", "-c", script], { runArgs: ["--tls", "off"] });
    const direct = start(["sh", "-c", script], { traced: false });
    expect(await on.exited).toBe(0);
    expect(await off.exited).toBe(0);
    expect(await direct.exited).toBe(0);
    const [hostname, certs] = direct.stdout().trim().split("\n");
    expect(on.stdout()).toBe(`${hostname}\n${Number(certs) + 1}\n`);
    expect(off.stdout()).toBe(direct.stdout());
  });
});
