import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as asn1js from "asn1js";
import { appendJksCertificates, isJks, KeyStoreError, readJks } from "~/agent/tls/jks.ts";
import { appendPkcs12Certificates, isPkcs12, readPkcs12 } from "~/agent/tls/pkcs12.ts";
import { hasCommand, scratchDir } from "../harness.ts";
import { makeCa } from "../tls-pki.ts";

/**
 * The JVM's trust stores, read as the JVM reads them and merged with the run's CA: stores made by keytool itself (JKS,
 * PKCS#12 as JDK 17 writes it, the legacy RC2/3DES encryption, password-less, with a private key), checked back with
 * keytool; wrong passwords and broken files are refused with a clear error, never guessed at.
 */
let scratch: ReturnType<typeof scratchDir>;
let companyCa: Uint8Array;
let runCa: Uint8Array;
const PASSWORD = "s3cret-store";

const der = (pem: string) => new Uint8Array(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ""), "base64"));
const path = (name: string) => join(scratch.dir, name);
const bytes = (name: string) => new Uint8Array(readFileSync(path(name)));

function keytool(args: string[]): string {
  const out = Bun.spawnSync(["keytool", ...args], { stdout: "pipe", stderr: "pipe" });
  const text = out.stdout.toString() + out.stderr.toString();
  if (out.exitCode !== 0) throw new Error(`keytool ${args.join(" ")} failed: ${text}`);
  return text;
}

/** keytool's own listing of a store: "alias, trustedCertEntry" lines, sorted. */
function listed(file: string, password: string | null, type: string): string[] {
  const out = Bun.spawnSync(["keytool", "-list", "-keystore", file, "-storetype", type, ...(password ? ["-storepass", password] : [])], {
    stdin: new TextEncoder().encode("\n"),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (out.exitCode !== 0) throw new Error(`keytool -list failed: ${out.stdout.toString()}${out.stderr.toString()}`);
  return out.stdout
    .toString()
    .split("\n")
    .filter((line) => /Entry,?\s*$/.test(line))
    .map((line) => line.replace(/^([^,]+), .*?, (\w+),\s*$/, "$1 $2"))
    .sort();
}

function importCa(store: string, type: string, options: string[] = []): void {
  keytool([
    ...options,
    "-importcert",
    "-noprompt",
    "-alias",
    "company",
    "-file",
    path("company.crt"),
    "-keystore",
    path(store),
    "-storetype",
    type,
    "-storepass",
    PASSWORD,
  ]);
}

beforeAll(() => {
  if (!hasCommand("keytool")) throw new Error("keytool is not installed (.ci/run installs default-jdk-headless)");
  scratch = scratchDir("tapscope-java-store-");
  companyCa = der(makeCa(scratch.dir, "company").cert);
  runCa = der(makeCa(scratch.dir, "run").cert);
  importCa("company.jks", "JKS");
  importCa("company.p12", "PKCS12");
  importCa("legacy.p12", "PKCS12", ["-J-Dkeystore.pkcs12.legacy"]);
  importCa("open.p12", "PKCS12", ["-J-Dkeystore.pkcs12.certProtectionAlgorithm=NONE", "-J-Dkeystore.pkcs12.macAlgorithm=NONE"]);
  keytool([
    "-genkeypair",
    "-keyalg",
    "EC",
    "-alias",
    "me",
    "-dname",
    "CN=me",
    "-keystore",
    path("keys.p12"),
    "-storetype",
    "PKCS12",
    "-storepass",
    PASSWORD,
  ]);
  importCa("keys.p12", "PKCS12");
}, 120_000);
afterAll(() => scratch?.cleanup());

describe("JKS", () => {
  test("the JVM's trusted certificates, with or without the password; a wrong one fails the integrity check", () => {
    const store = bytes("company.jks");
    expect(isJks(store)).toBe(true);
    expect(readJks(store, PASSWORD).trusted).toEqual([companyCa]);
    expect(readJks(store, null).trusted).toEqual([companyCa]);
    expect(() => readJks(store, "wrong")).toThrow(
      new KeyStoreError("the password is wrong or the store was altered (its integrity check failed)"),
    );
  });

  test("merged: keytool reads it with the program's password and lists the program's CA and the run's", () => {
    const store = bytes("company.jks");
    writeFileSync(path("merged.jks"), appendJksCertificates(store, readJks(store, PASSWORD), [runCa], PASSWORD));
    expect(listed(path("merged.jks"), PASSWORD, "JKS")).toEqual(["company trustedCertEntry", "tapscope-run-ca trustedCertEntry"]);
    expect(readJks(bytes("merged.jks"), PASSWORD).trusted).toEqual([companyCa, runCa]);
  }, 60_000);

  test("the JDK's own cacerts as Debian ships it (JKS, no password)", () => {
    const cacerts = "/etc/ssl/certs/java/cacerts";
    const store = new Uint8Array(readFileSync(cacerts));
    if (!isJks(store)) return; // another distribution's PKCS#12 cacerts is covered by the PKCS#12 cases
    expect(readJks(store, null).trusted.length).toBeGreaterThan(50);
  });

  test("a truncated store or another file is refused with a reason", () => {
    const store = bytes("company.jks");
    expect(() => readJks(store.subarray(0, 40), PASSWORD)).toThrow("the key store is truncated");
    expect(() => readJks(new TextEncoder().encode("not a key store at all"), null)).toThrow("not a JKS or JCEKS key store");
  });
});

describe("PKCS#12", () => {
  test("keytool's today (AES-256, HMAC-SHA-256) and legacy (RC2-40, 3DES) stores read with the password", () => {
    for (const name of ["company.p12", "legacy.p12"]) {
      const store = bytes(name);
      expect(isPkcs12(store)).toBe(true);
      const read = readPkcs12(store, PASSWORD);
      expect(read.trusted).toEqual([companyCa]);
      expect(read.skippedEncrypted).toBe(0);
    }
    expect(readPkcs12(bytes("company.p12"), PASSWORD).mac).toEqual({ hash: "sha256", iterations: 10_000 });
  });

  test("without a password the encrypted certificates are skipped, as the JVM skips them; a password-less store is read whole", () => {
    const read = readPkcs12(bytes("company.p12"), null);
    expect([read.trusted, read.skippedEncrypted]).toEqual([[], 1]);
    expect(readPkcs12(bytes("open.p12"), null).trusted).toEqual([companyCa]);
  });

  test("a wrong password fails the MAC", () => {
    expect(() => readPkcs12(bytes("company.p12"), "wrong")).toThrow("the password is wrong or the store was altered");
    expect(() => readPkcs12(bytes("legacy.p12"), "wrong")).toThrow("the password is wrong");
  });

  test("merged: every store keytool made reads back with the program's password, its entries (keys too) and the run's CA", () => {
    for (const [name, password] of [
      ["company.p12", PASSWORD],
      ["legacy.p12", PASSWORD],
      ["open.p12", null],
      ["keys.p12", PASSWORD],
    ] as const) {
      const merged = path(`merged-${name}`);
      writeFileSync(merged, appendPkcs12Certificates(readPkcs12(bytes(name), password), [runCa], password));
      const expected = ["company trustedCertEntry", "tapscope-run-ca trustedCertEntry"];
      if (name === "keys.p12") expected.push("me PrivateKeyEntry");
      expect(listed(merged, password, "PKCS12")).toEqual(expected.sort());
      // The MAC is made again under the same password: a wrong one still fails.
      if (password) expect(() => readPkcs12(bytes(`merged-${name}`), "wrong")).toThrow("the password is wrong");
    }
  }, 60_000);

  test("a certificate bag without Java's trusted mark is not trusted (the JVM ignores it)", () => {
    const pem = path("company.crt");
    const out = Bun.spawnSync([
      "openssl",
      "pkcs12",
      "-export",
      "-nokeys",
      "-in",
      pem,
      "-out",
      path("openssl.p12"),
      "-passout",
      `pass:${PASSWORD}`,
    ]);
    expect(out.exitCode).toBe(0);
    expect(readPkcs12(bytes("openssl.p12"), PASSWORD).trusted).toEqual([]);
  }, 30_000);

  test("garbage and hostile iteration counts are refused with a reason", () => {
    const store = bytes("company.p12");
    expect(() => readPkcs12(store.subarray(0, 100), PASSWORD)).toThrow(KeyStoreError);
    expect(isPkcs12(new TextEncoder().encode("hello"))).toBe(false);
    // The MAC's iteration count raised to 2^31-1: refused before any work, not minutes of key derivation.
    const pfx = asn1js.fromBER(store.slice()).result as asn1js.Sequence;
    const macData = pfx.valueBlock.value[2] as asn1js.Sequence;
    macData.valueBlock.value[2] = new asn1js.Integer({ value: 2 ** 31 - 1 });
    const started = performance.now();
    expect(() => readPkcs12(new Uint8Array(pfx.toBER(false)), PASSWORD)).toThrow("MAC: 2147483647 iterations is refused");
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
