import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trustStoreP12 } from "./authority.ts";

/**
 * What the traced program trusts, and the trust it is offered. The program's own roots (the system bundle plus the
 * CA files its environment names) are what the relay verifies real peers against; the program is offered those
 * roots plus the run's CA, merged (a CA-only file would break every other host for programs whose variable replaces
 * their roots), through the variables each runtime reads and, by the openat interception, as the bundle file itself.
 */

/** CA bundle files programs open directly: Debian/Ubuntu/Alpine, Fedora/RHEL, SUSE, the OpenSSL and Go defaults. */
export const bundlePaths: readonly string[] = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
  "/etc/ssl/ca-bundle.pem",
  "/etc/pki/tls/cacert.pem",
  "/etc/ssl/cert.pem",
  "/usr/lib/ssl/cert.pem",
  "/usr/local/ssl/cert.pem",
];

/** Variables naming a CA file the program adds to (or uses instead of) its roots. */
export const caFileVariables = [
  "SSL_CERT_FILE",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "NODE_EXTRA_CA_CERTS",
  "AWS_CA_BUNDLE",
  "GIT_SSL_CAINFO",
  "DENO_CERT",
  "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
  "NIX_SSL_CERT_FILE",
] as const;

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
type Env = Record<string, string | undefined>;

/** A file's text, or why not: bounded so a hostile path (a 1 GB file, a FIFO) cannot hold the run. */
function readBounded(path: string): { text: string } | { error: string } {
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
    return { text: buf.subarray(0, read).toString("latin1") };
  } finally {
    closeSync(fd);
  }
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
  notes: string[];
  /**
   * Resolves when every file is written. The JVM's store (some 60 ms for a system bundle) is built while the launcher
   * starts; the program must not be let run before this resolves.
   */
  ready: Promise<void>;
  cleanup(): void;
};

export type OfferOptions = {
  env: Env;
  programPems: string[];
  caPem: string;
  /** Builds the JVM's trust store (PKCS#12); null leaves Java alone. */
  buildTrustStore?: ((pems: string[], password: string) => Promise<Uint8Array>) | null;
};

/**
 * Writes the merged trust into a private directory (0700, files 0600) and returns the variables that point the
 * program at it. A variable the user set is merged, not overwritten: its certificates are in the program's roots
 * (programTrust read them), and NODE_EXTRA_CA_CERTS keeps the user's file's certificates next to the CA.
 */
export async function offeredTrust(options: OfferOptions): Promise<OfferedTrust> {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-trust-"));
  const notes: string[] = [];
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

  // Java replaces its cacerts with a trustStore: the store holds the program's roots and the CA.
  const javaOptions = options.env.JAVA_TOOL_OPTIONS ?? "";
  let ready: Promise<void> = Promise.resolve();
  const buildTrustStore = options.buildTrustStore === undefined ? trustStoreP12 : options.buildTrustStore;
  if (/-Djavax\.net\.ssl\.trustStore=/.test(javaOptions)) {
    notes.push(
      "JAVA_TOOL_OPTIONS already names a trust store; Java programs keep it and their HTTPS is passed through if they reject the run's CA",
    );
  } else if (buildTrustStore) {
    const password = randomBytes(12).toString("hex");
    const store = join(dir, "java-trust.p12");
    ready = buildTrustStore([...options.programPems, ...ca], password).then(
      (bytes) => {
        write("java-trust.p12", bytes);
      },
      (error: unknown) => {
        notes.push(`the Java trust store could not be built (${error instanceof Error ? error.message : String(error)})`);
      },
    );
    const added = `-Djavax.net.ssl.trustStore=${store} -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=${password}`;
    env.JAVA_TOOL_OPTIONS = javaOptions ? `${javaOptions} ${added}` : added;
  }
  return {
    dir,
    bundleFile,
    env,
    notes,
    ready,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
