import { accessSync, constants, readFileSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { errorMessage } from "~/lib/errors.ts";
import { appendJksCertificates, isJks, KeyStoreError, readJks } from "./jks.ts";
import { appendPkcs12Certificates, isPkcs12, readPkcs12 } from "./pkcs12.ts";
import { type OfferedTrust, pemCertificates, programTrust, readBounded, readBoundedBytes } from "./trust.ts";
import {
  bundlePaths,
  caFileVariables,
  type Env,
  JDK_STORE_SUFFIXES,
  javaHomeOf,
  javaSystemProperties,
  parseEnviron,
} from "./trust-paths.ts";

/**
 * What each traced process trusts, from its own environment and command line as they were at its exec (a wrapper
 * script, `env`, an entrypoint or Gradle may have changed them since tapscope started), and the merged trust its opens
 * are answered with:
 * - any program: the system bundle plus the CA files its variables name; opens of the bundle paths get those roots
 *   plus the run's CA, opens of a CA file its environment names (one tapscope did not set) get that file plus the CA;
 * - a JVM (`<java.home>/bin/java`): exactly the trust store it loads (the `javax.net.ssl.trustStore` it was given,
 *   else `jssecacerts`, else `cacerts`, read with the password it was given), and its open of that store gets the same
 *   store with the run's CA added, in the same format under the same password. Nothing is added to its environment,
 *   so it announces nothing on stderr.
 * A trust store that cannot be read as the JVM would read it is not answered: the JVM reads its own file and its own
 * error (a wrong password) stays its own; its connections pass through with the reason.
 */
export type ProcessView = { env: Env; argv: string[]; exe: string; cwd: string };

export type TrustProfile = {
  key: string;
  /** PEM roots a peer of this process is verified against; null when they are unknown (the connection passes through). */
  pems: string[] | null;
  /** Why pems is null. */
  reason: string;
  /** Paths, as the process opens them, whose open is answered with a merged file (made on first use; null: not answered). */
  answers: Map<string, () => string | null>;
};

export type ProcessTrustOptions = {
  caPem: string;
  /** Tapscope's own environment when the run began: the user's trust variables, before tapscope pointed them at its files. */
  runEnv: Env;
  /** The program's roots under runEnv (the system bundle plus the user's CA files). */
  basePems: string[];
  offered: Pick<OfferedTrust, "dir" | "bundleFile">;
  say: (line: string) => void;
  /** The system bundle files looked for (default: the well-known paths). */
  systemBundles?: readonly string[];
  /** Test seam: a process's environment, arguments, executable and working directory; null when it is gone. */
  readProcess?: (pid: number) => ProcessView | null;
};

/** Why a JVM's connections are not decrypted when its trust store cannot be read as it reads it. */
export const TRUST_STORE_UNREADABLE = "the program's trust store could not be read";

/** Profiles kept (each holds its roots, a whole system bundle's worth); a run usually has a handful. */
const MAX_PROFILES = 64;
const MAX_FILES = 512;
const TRUST_STORE = "javax.net.ssl.trustStore";
const TRUST_STORE_PASSWORD = "javax.net.ssl.trustStorePassword";
const TRUST_VARIABLES = [...caFileVariables, "SSL_CERT_DIR"] as const;

export function readProcessView(pid: number, procRoot = "/proc"): ProcessView | null {
  try {
    const dir = `${procRoot}/${pid}`;
    const env = parseEnviron(readFileSync(`${dir}/environ`, "utf8"));
    const argv = readFileSync(`${dir}/cmdline`, "utf8").replace(/\0$/, "").split("\0");
    const exe = readlinkSync(`${dir}/exe`).replace(/ \(deleted\)$/, "");
    const cwd = readlinkSync(`${dir}/cwd`);
    return { env, argv, exe, cwd };
  } catch {
    return null;
  }
}

function derToPem(der: Uint8Array): string {
  const base64 = Buffer.from(der).toString("base64");
  return `-----BEGIN CERTIFICATE-----\n${base64.replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`;
}

function pemToDer(pem: string): Uint8Array {
  return new Uint8Array(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ""), "base64"));
}

function isReadableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

export class ProcessTrust {
  private readonly profiles = new Map<string, TrustProfile>();
  private readonly base: TrustProfile;
  private readonly baseKey: string;
  private readonly caPems: string[];
  private readonly readProcess: (pid: number) => ProcessView | null;
  private files = 0;
  private hasSaidFull = false;

  constructor(private readonly options: ProcessTrustOptions) {
    this.caPems = pemCertificates(options.caPem);
    this.readProcess = options.readProcess ?? ((pid) => readProcessView(pid));
    this.baseKey = this.nativeKey(options.runEnv);
    const answers = new Map<string, () => string | null>();
    for (const path of bundlePaths) answers.set(path, () => options.offered.bundleFile);
    this.base = { key: this.baseKey, pems: options.basePems, reason: "", answers };
  }

  /** The trust of process `pid` now (its exec'd environment); the run's own when it is gone. */
  profileFor(pid: number): TrustProfile {
    const view = this.readProcess(pid);
    if (!view) return this.base;
    const javaHome = javaHomeOf(view.exe);
    return javaHome ? this.jvmProfile(pid, view, javaHome) : this.nativeProfile(pid, view);
  }

  /** The file to answer this process's open of `path` with, or null to let the open run. */
  answerOpen(pid: number, path: string): string | null {
    return this.profileFor(pid).answers.get(path)?.() ?? null;
  }

  private remember(profile: TrustProfile): TrustProfile {
    this.profiles.set(profile.key, profile);
    if (this.profiles.size > MAX_PROFILES) this.profiles.delete(this.profiles.keys().next().value as string);
    return profile;
  }

  /** A variable pointing into the run's own directory is the user's original setting, which tapscope replaced. */
  private userValue(env: Env, name: string): string | undefined {
    const value = env[name];
    if (value?.startsWith(`${this.options.offered.dir}/`)) return this.options.runEnv[name];
    return value;
  }

  private nativeKey(env: Env): string {
    return ["native", ...TRUST_VARIABLES.map((name) => `${name}=${this.userValue(env, name) ?? ""}`)].join("\0");
  }

  private nativeProfile(pid: number, view: ProcessView): TrustProfile {
    const key = this.nativeKey(view.env);
    if (key === this.baseKey) return this.base;
    const known = this.profiles.get(key);
    if (known) return known;
    const env: Env = {};
    for (const name of TRUST_VARIABLES) {
      const value = this.userValue(view.env, name);
      // Relative paths are the process's, from its working directory.
      if (value) env[name] = name === "SSL_CERT_DIR" ? value : resolve(view.cwd, value);
    }
    const trust = programTrust(env, this.options.systemBundles);
    const who = `${basename(view.exe)} (pid ${pid})`;
    for (const note of trust.notes) this.options.say(`TLS: ${who}: ${note}`);
    const answers = new Map<string, () => string | null>();
    const bundle = this.fileMaker("bundle.pem", () => [...trust.pems, ...this.caPems].join(""));
    for (const path of bundlePaths) answers.set(path, bundle);
    for (const name of caFileVariables) {
      const value = this.userValue(view.env, name);
      if (!value || answers.has(value)) continue;
      answers.set(
        value,
        this.fileMaker("ca.pem", () => {
          const read = readBounded(resolve(view.cwd, value));
          return "text" in read ? [...pemCertificates(read.text), ...this.caPems].join("") : null;
        }),
      );
    }
    return this.remember({ key, pems: trust.pems, reason: "", answers });
  }

  private jvmProfile(pid: number, view: ProcessView, javaHome: string): TrustProfile {
    const props = javaSystemProperties(view.env, view.argv);
    const named = props.get(TRUST_STORE) ?? `${javaHome}${JDK_STORE_SUFFIXES[0]}`;
    const passwordText = props.get(TRUST_STORE_PASSWORD);
    // The JVM loads its trust store with no password at all when it was given none (or an empty one).
    const password = passwordText ? passwordText : null;
    const who = `${basename(view.exe)} (pid ${pid})`;
    if (named === "NONE") {
      return this.remember({ key: "jvm\0NONE", pems: null, reason: "the program's trust store is not a file", answers: new Map() });
    }
    // As the JVM does: the named store (or jssecacerts) when it is a readable file, else cacerts.
    const opened = [named, `${javaHome}${JDK_STORE_SUFFIXES[1]}`].find((path) => path !== "" && isReadableFile(resolve(view.cwd, path)));
    if (!opened) {
      return this.remember({ key: `jvm\0none\0${named}`, pems: null, reason: "the program has no trust store", answers: new Map() });
    }
    const file = resolve(view.cwd, opened);
    let stamp = "";
    try {
      const stat = statSync(file);
      stamp = `${stat.size}:${stat.mtimeMs}:${stat.ino}`;
    } catch {}
    const key = ["jvm", file, stamp, password ?? "\u0001"].join("\0");
    const known = this.profiles.get(key);
    if (known) return known;
    const read = readBoundedBytes(file);
    const unreadable = (why: string): TrustProfile => {
      this.options.say(`TLS: ${who}: its trust store ${opened} could not be read (${why}); its HTTPS passes through undecrypted`);
      return this.remember({ key, pems: null, reason: TRUST_STORE_UNREADABLE, answers: new Map() });
    };
    if ("error" in read) return unreadable(read.error);
    const bytes = read.bytes;
    let trusted: Uint8Array[];
    let merged: () => Uint8Array;
    try {
      const ca = this.caPems.map(pemToDer);
      if (isJks(bytes)) {
        const store = readJks(bytes, password);
        trusted = store.trusted;
        merged = () => appendJksCertificates(bytes, store, ca, password);
      } else if (isPkcs12(bytes)) {
        const store = readPkcs12(bytes, password);
        trusted = store.trusted;
        if (store.skippedEncrypted > 0) {
          this.options.say(
            `TLS: ${who}: its trust store ${opened} is read without a password, so its encrypted certificates are left out (as the JVM leaves them out)`,
          );
        }
        merged = () => appendPkcs12Certificates(store, ca, password);
      } else {
        return unreadable("neither JKS nor PKCS#12");
      }
    } catch (error) {
      return unreadable(error instanceof KeyStoreError ? error.message : errorMessage(error));
    }
    const answers = new Map<string, () => string | null>();
    answers.set(opened, this.fileMaker(isJks(bytes) ? "trust.jks" : "trust.p12", merged));
    return this.remember({ key, pems: trusted.map(derToPem), reason: "", answers });
  }

  /** Writes a merged file once, on first use, into the run's private directory; null when it cannot be made. */
  private fileMaker(name: string, content: () => string | Uint8Array | null): () => string | null {
    let made: string | null | undefined;
    return () => {
      if (made !== undefined) return made;
      made = null;
      if (this.files >= MAX_FILES) {
        if (!this.hasSaidFull) this.options.say(`TLS: more than ${MAX_FILES} merged trust files; later ones are not made`);
        this.hasSaidFull = true;
        return null;
      }
      try {
        const data = content();
        if (data === null) return null;
        const path = join(this.options.offered.dir, `${++this.files}-${name}`);
        writeFileSync(path, data, { mode: 0o600 });
        made = path;
      } catch (error) {
        this.options.say(`TLS: a merged trust file could not be written (${errorMessage(error)})`);
      }
      return made;
    };
  }
}
