import { basename, dirname } from "node:path";

/**
 * Which files a process reads its trust from: the well-known bundle paths, the files its environment names, and a
 * JVM's trust store (named by a system property, else the JDK's own `cacerts`). Small and free of crypto: the
 * notification Worker uses it to pick the opens worth the supervisor's attention.
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
  // libpq's root certificate for sslmode=verify-ca/verify-full (psql, psycopg, and drivers built on it).
  "PGSSLROOTCERT",
] as const;

/** The JDK's trust stores, relative to java.home: `jssecacerts` is preferred when it exists. */
export const JDK_STORE_SUFFIXES = ["/lib/security/jssecacerts", "/lib/security/cacerts"] as const;

/** Variables a JVM reads options from, lowest precedence first (the command line sits between the last two). */
const TOOL_OPTIONS = "JAVA_TOOL_OPTIONS";
const LAUNCHER_OPTIONS = "JDK_JAVA_OPTIONS";
const OVERRIDE_OPTIONS = "_JAVA_OPTIONS";
export const javaOptionVariables = [TOOL_OPTIONS, LAUNCHER_OPTIONS, OVERRIDE_OPTIONS] as const;

export type Env = Record<string, string | undefined>;

/** `NAME=value\0...` (/proc/<pid>/environ) as a record; the first of a repeated name wins, as getenv() finds it. */
export function parseEnviron(text: string): Env {
  const env: Env = {};
  for (const entry of text.split("\0")) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    const name = entry.slice(0, eq);
    if (!(name in env)) env[name] = entry.slice(eq + 1);
  }
  return env;
}

/** Only the named variables of a `NAME=value\0...` text (the first of each), without splitting the rest. */
export function environValues(text: string, names: readonly string[]): Env {
  const env: Env = {};
  for (const name of names) {
    const needle = `${name}=`;
    let start = needle.length;
    if (!text.startsWith(needle)) {
      const at = text.indexOf(`\0${needle}`);
      if (at < 0) continue;
      start = at + 1 + needle.length;
    }
    const end = text.indexOf("\0", start);
    env[name] = text.slice(start, end < 0 ? text.length : end);
  }
  return env;
}

/** The variables namedTrustPaths reads. */
export const trustVariableNames: readonly string[] = [...caFileVariables, ...javaOptionVariables];

/** Options in a JVM variable: split on white space; single or double quotes keep spaces (and are removed). */
export function javaOptionWords(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let quote = "";
  let hasWord = false;
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = "";
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      hasWord = true;
    } else if (/\s/.test(ch)) {
      if (hasWord) words.push(word);
      word = "";
      hasWord = false;
    } else {
      word += ch;
      hasWord = true;
    }
  }
  if (hasWord) words.push(word);
  return words;
}

/** Launcher options followed by a separate value: what comes after them is not the main class. */
const OPTIONS_WITH_VALUE = new Set([
  "-cp",
  "-classpath",
  "--class-path",
  "-p",
  "--module-path",
  "--upgrade-module-path",
  "--add-modules",
  "--limit-modules",
  "--add-reads",
  "--add-exports",
  "--add-opens",
  "--patch-module",
  "--enable-native-access",
  "--source",
  "-d",
  "--describe-module",
]);

/** The options of a `java` command line: up to the main class, `-jar FILE`, `-m MODULE` or a source file. */
export function launcherOptions(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-jar" || arg === "-m" || arg === "--module") break;
    if (!arg.startsWith("-")) break;
    out.push(arg);
    if (OPTIONS_WITH_VALUE.has(arg)) i++;
  }
  return out;
}

/**
 * The `-D` system properties a JVM starts with, later settings winning as in the JVM: JAVA_TOOL_OPTIONS, then
 * JDK_JAVA_OPTIONS (the `java` launcher puts it before its own arguments), the command line, then _JAVA_OPTIONS.
 */
export function javaSystemProperties(env: Env, argv: readonly string[]): Map<string, string> {
  const words = [
    ...javaOptionWords(env[TOOL_OPTIONS] ?? ""),
    ...javaOptionWords(env[LAUNCHER_OPTIONS] ?? ""),
    ...launcherOptions(argv),
    ...javaOptionWords(env[OVERRIDE_OPTIONS] ?? ""),
  ];
  const props = new Map<string, string>();
  for (const word of words) {
    if (!word.startsWith("-D")) continue;
    const eq = word.indexOf("=");
    if (eq < 0) props.set(word.slice(2), "");
    else props.set(word.slice(2, eq), word.slice(eq + 1));
  }
  return props;
}

/** The java.home of a JVM started from this executable (`<home>/bin/java`), or null for any other program. */
export function javaHomeOf(exe: string): string | null {
  if (basename(exe) !== "java") return null;
  const bin = dirname(exe);
  return basename(bin) === "bin" ? dirname(bin) : null;
}

/**
 * Files whose opens may need the merged trust, named by one process's environment and command line: its CA files and
 * a JVM's trust store. Which of them a process's open is answered for is decided later, knowing the whole process.
 */
export function namedTrustPaths(env: Env, argv: readonly string[]): string[] {
  const paths: string[] = [];
  for (const name of caFileVariables) {
    const value = env[name];
    if (value) paths.push(value);
  }
  const store = javaSystemProperties(env, argv).get("javax.net.ssl.trustStore");
  if (store) paths.push(store);
  return paths;
}
