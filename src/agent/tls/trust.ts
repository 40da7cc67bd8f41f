import { closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundlePaths, caFileVariables, type Env } from "./trust-paths.ts";

export { bundlePaths, caFileVariables } from "./trust-paths.ts";

/**
 * What the traced program trusts, and the trust it is offered. The program's own roots (the system bundle plus the
 * CA files its environment names) are what the relay verifies real peers against; the program is offered those
 * roots plus the run's CA, merged (a CA-only file would break every other host for programs whose variable replaces
 * their roots), through the variables each runtime reads and, by the openat interception, as the bundle file itself.
 * A JVM is offered nothing here: its own trust store's open is answered (process-trust.ts).
 */

/** Variables pointed at the merged bundle (NODE_EXTRA_CA_CERTS adds to Node's own list, so it gets less: see below). */
const BUNDLE_VARIABLES = [
  "SSL_CERT_FILE",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "AWS_CA_BUNDLE",
  "GIT_SSL_CAINFO",
  "DENO_CERT",
  "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
] as const;

const MAX_FILE_BYTES = 16 * 1024 * 1024;
const MAX_CERTIFICATES = 10_000;
/** Files read from SSL_CERT_DIR (hashed names and *.pem / *.crt); a directory with more is read up to this. */
const MAX_DIRECTORY_FILES = 2000;
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]+?)-----END CERTIFICATE-----/g;

export type ProgramTrust = { pems: string[]; notes: string[]; systemBundle: string | null };

/** A file's bytes, or why not: bounded so a hostile path (a 1 GB file, a FIFO) cannot hold the run. */
export function readBoundedBytes(path: string): { bytes: Uint8Array } | { error: string } {
  let fd: number;
  try {
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { error: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { error: "not a regular file" };
    if (stat.size > MAX_FILE_BYTES) return { error: `larger than ${MAX_FILE_BYTES / 1024 / 1024} MiB` };
    const buf = Buffer.alloc(stat.size);
    let read = 0;
    while (read < buf.length) {
      const n = readSync(fd, buf, read, buf.length - read, read);
      if (n <= 0) break;
      read += n;
    }
    return { bytes: buf.subarray(0, read) };
  } finally {
    closeSync(fd);
  }
}

/** A file's text (latin1: PEM is ASCII), bounded as readBoundedBytes. */
export function readBounded(path: string): { text: string } | { error: string } {
  const read = readBoundedBytes(path);
  return "error" in read ? read : { text: Buffer.from(read.bytes.buffer, read.bytes.byteOffset, read.bytes.length).toString("latin1") };
}

/** The certificate blocks of a PEM text, normalised (one per certificate, LF line ends), at most `limit`. */
export function pemCertificates(text: string, limit = MAX_CERTIFICATES): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    const body = m[1]!.replace(/[\r\n]/g, "");
    if (body.length === 0 || body.length % 4 !== 0) continue;
    out.push(`-----BEGIN CERTIFICATE-----\n${body.replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`);
    if (out.length >= limit) break;
  }
  return out;
}

/** The roots the program would use to verify peers. Never throws; what could not be read is in `notes`. */
export function programTrust(env: Env, paths: readonly string[] = bundlePaths): ProgramTrust {
  const notes: string[] = [];
  const seen = new Set<string>();
  const pems: string[] = [];
  const add = (list: string[]) => {
    for (const pem of list) {
      if (pems.length >= MAX_CERTIFICATES) return;
      if (seen.has(pem)) continue;
      seen.add(pem);
      pems.push(pem);
    }
  };
  let systemBundle: string | null = null;
  for (const path of paths) {
    const read = readBounded(path);
    if ("error" in read) continue;
    const list = pemCertificates(read.text);
    if (list.length === 0) continue;
    systemBundle = path;
    add(list);
    break;
  }
  if (!systemBundle) notes.push("no system CA bundle found: upstream certificates are checked only against CA files the environment names");
  for (const name of caFileVariables) {
    const path = env[name];
    if (!path) continue;
    const read = readBounded(path);
    if ("error" in read) {
      notes.push(`${name}=${path} could not be read (${read.error}); it is left out`);
      continue;
    }
    const list = pemCertificates(read.text);
    if (list.length === 0) notes.push(`${name}=${path} holds no PEM certificate; it is left out`);
    add(list);
  }
  // OpenSSL-based programs also trust the certificates of every directory SSL_CERT_DIR names (colon-separated).
  for (const dir of (env.SSL_CERT_DIR ?? "").split(":").filter(Boolean)) {
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => /^[0-9a-f]{8}\.\d+$/.test(n) || /\.(pem|crt)$/.test(n));
    } catch (error) {
      notes.push(`SSL_CERT_DIR=${dir} could not be listed (${(error as NodeJS.ErrnoException).code ?? String(error)}); it is left out`);
      continue;
    }
    if (names.length > MAX_DIRECTORY_FILES)
      notes.push(`SSL_CERT_DIR=${dir}: only the first ${MAX_DIRECTORY_FILES} of ${names.length} files are read`);
    for (const name of names.sort().slice(0, MAX_DIRECTORY_FILES)) {
      const read = readBounded(join(dir, name));
      if (!("error" in read)) add(pemCertificates(read.text));
    }
  }
  return { pems, notes, systemBundle };
}

export type OfferedTrust = {
  dir: string;
  /** The program's roots plus the run's CA. */
  bundleFile: string;
  /** Variables to add to the program's environment. */
  env: Record<string, string>;
  cleanup(): void;
};

export type OfferOptions = {
  env: Env;
  programPems: string[];
  caPem: string;
};

/**
 * Writes the merged trust into a private directory (0700, files 0600) and returns the variables that point the
 * program at it. A variable the user set is merged, not overwritten: its certificates are in the program's roots
 * (programTrust read them), and NODE_EXTRA_CA_CERTS and PGSSLROOTCERT keep the user's file's certificates next to the CA.
 */
export function offeredTrust(options: OfferOptions): OfferedTrust {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-trust-"));
  const write = (name: string, data: string | Uint8Array) => {
    const path = join(dir, name);
    writeFileSync(path, data, { mode: 0o600 });
    return path;
  };
  const ca = pemCertificates(options.caPem);
  const bundleFile = write("bundle.pem", [...options.programPems, ...ca].join(""));
  const env: Record<string, string> = {};
  for (const name of BUNDLE_VARIABLES) env[name] = bundleFile;
  // Any other variable that names a system bundle (PIP_CERT, HTTPLIB2_CA_CERTS, a tool's own setting) gets the merged one.
  for (const [name, value] of Object.entries(options.env)) {
    if (value && !(name in env) && name !== "NODE_EXTRA_CA_CERTS" && bundlePaths.includes(value)) env[name] = bundleFile;
  }

  // Node (and Bun) add this file to their own list: the CA alone is enough, plus whatever the user's file held.
  const userNode = options.env.NODE_EXTRA_CA_CERTS;
  const userNodePems = userNode
    ? (() => {
        const read = readBounded(userNode);
        return "text" in read ? pemCertificates(read.text) : [];
      })()
    : [];
  env.NODE_EXTRA_CA_CERTS = write("node-extra.pem", [...userNodePems, ...ca].join(""));
  // libpq's roots for verify-ca/verify-full replace the system's: the user's file and the CA, nothing more.
  const userPg = options.env.PGSSLROOTCERT;
  if (userPg && userPg !== "system") {
    const read = readBounded(userPg);
    if ("text" in read) env.PGSSLROOTCERT = write("pg-root.pem", [...pemCertificates(read.text), ...ca].join(""));
  }
  return { dir, bundleFile, env, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
