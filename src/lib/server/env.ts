import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir, totalmem } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { parseTrustedProxies } from "./client-address.ts";
import { buildInfo } from "./version.ts";

/**
 * The server's configuration, parsed once from the environment. Every variable is in the README table.
 * Nothing else in the code base reads process.env.
 */
export type Config = {
  port: number;
  publicUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  sessionSecret: string;
  smtpUrl: string | undefined;
  mailFrom: string;
  google: OAuthProviderConfig | undefined;
  /** Paid plans through Stripe; undefined (the self-hosted default): billing is off and no plan limit applies. */
  billing: BillingConfig | undefined;
  github: OAuthProviderConfig | undefined;
  supportEmail: string;
  clickhouseUrl: string | undefined;
  /**
   * CLICKHOUSE_CLUSTER: the cluster (a name from ClickHouse's remote_servers) whose shards hold the events: per-namespace
   * local tables on every shard, a Distributed table over them, DDL ON CLUSTER (ADR 0021).
   */
  clickhouseCluster: string | undefined;
  /** BROKER_URL (redis://): the broker that joins several server nodes (live fan-out, shared limits); unset: one process. */
  brokerUrl: string | undefined;
  /** Events per second per namespace (token bucket average); 0 means no limit. */
  ingestRateLimit: number;
  retentionDays: number;
  /** Keep events per the org's plan (Free 3, Team 7, Scale 30 days) instead of retentionDays. */
  planRetention: boolean;
  isProduction: boolean;
  commitHash: string;
  /** Where /download/* finds the tapscope binaries; unset: the running binary itself and dist/. */
  downloadDir?: string;
  /**
   * The server's memory budget in bytes (MEMORY_LIMIT): DuckDB's memory_limit (the rest spills under DATA_DIR)
   * and the server's own buffers are shares of it (memoryShares).
   */
  memoryLimitBytes: number;
  /** DuckDB's worker threads: it shares the host with the programs it traces. */
  duckdbThreads: number;
  /** TRUST_PROXY as CIDRs: peers whose X-Forwarded-For names the client (rate limits per client). */
  trustProxy: string[];
  /** New anonymous links per client address per hour (JoinPublisher without a token); 0 means no limit. */
  anonymousLinksPerHour: number;
  /** EVENT_LOG_MAX_BYTES: what the pages' reports (/api/Event, /api/LogEvent) may take in the database, oldest dropped first. */
  eventLogMaxBytes: number;
  /** MAX_WEBSOCKETS: open WebSockets of every kind in all; 0: from the descriptor limit and MEMORY_LIMIT's share (defaultMaxSockets). */
  maxWebSockets: number;
  /** WEBSOCKETS_PER_ADDRESS: open WebSockets of every kind from one client address. */
  webSocketsPerAddress: number;
  /** WEBSOCKETS_PER_LINK: open /link pages (their PingLink sockets) of one link, all addresses together. */
  webSocketsPerLink: number;
  /**
   * The OpenTelemetry collector every namespace's spans go to unless the namespace has settings of its own
   * (OTEL_EXPORTER_OTLP_ENDPOINT or _TRACES_ENDPOINT, _HEADERS, _PROTOCOL, _TIMEOUT); undefined: no server-wide export.
   */
  otlp: OtlpDestination | undefined;
  /**
   * OTLP_DESTINATIONS: "any" (default), or "public": a namespace's own collector must resolve to public addresses only
   * (a hosted server, where namespace admins must not reach the server's own network).
   */
  otlpDestinations: "any" | "public";
  /** ALERT_EVALUATION_SECONDS: how often the alert rules are evaluated (on one node of a cluster). */
  alertEvaluationSeconds: number;
  /** WEBHOOKS_TO_PRIVATE_ADDRESSES: alert webhooks may reach loopback and private addresses (off: only public ones). */
  webhooksToPrivateAddresses: boolean;
};

export const otlpProtocols = ["http/protobuf", "http/json"] as const;
export type OtlpProtocol = (typeof otlpProtocols)[number];

/** Where and how spans are sent: OTLP/HTTP to this URL (the traces path included). */
export type OtlpDestination = {
  url: string;
  headers: Array<[string, string]>;
  protocol: OtlpProtocol;
  timeoutMs: number;
};

/** The default budget: 1 GiB or a quarter of the machine's memory, whichever is smaller. */
export function defaultMemoryLimit(machineBytes = totalmem()): number {
  return Math.min(1024 ** 3, Math.floor(machineBytes / 4));
}

/** "512MiB", "1GiB", "2G", "800MB" or a number of bytes. */
export function parseBytes(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(|b|k|kb|kib|m|mb|mib|g|gb|gib)\s*$/i.exec(raw);
  if (!m) return null;
  const unit = (m[2] ?? "").toLowerCase();
  const scale = unit.startsWith("k") ? 1024 : unit.startsWith("m") ? 1024 ** 2 : unit.startsWith("g") ? 1024 ** 3 : 1;
  return Math.floor(Number(m[1]) * scale);
}

/**
 * How the budget is shared. Each share caps what one part of the server may hold: DuckDB's buffer manager a quarter
 * (it spills beyond it to DATA_DIR); the store sink's buffer (what waits while the store is slow) a quarter less a
 * thirty-second, counted in characters (EventRows sizes: about two bytes each as JS strings); that thirty-second is
 * the OTLP export's queue (spans waiting for a batch, a parent or a retry); a sixteenth each for the live views' retained
 * history, what viewers hold unsent (their queues and socket buffers), HAR exports running at once (a page of
 * bodies and the response's buffer each: ExportSlots) and open WebSockets (16 KiB each: the default MAX_WEBSOCKETS).
 * The rest, a quarter, is the runtime itself (an idle server holds about 390 MB: the runtime, PGlite's WebAssembly
 * memory, DuckDB's own), which the MemoryGuard keeps from growing with garbage. An export is streamed, so its cap
 * on size bounds the download, not memory: a quarter of the budget.
 */
export function memoryShares(limitBytes: number): {
  duckdbBytes: number;
  storeBufferChars: number;
  liveHistoryBytes: number;
  liveSendBytes: number;
  harExportBytes: number;
  socketBytes: number;
  harMaxBytes: number;
  otlpQueueBytes: number;
} {
  return {
    duckdbBytes: Math.floor(limitBytes / 4),
    storeBufferChars: Math.floor((limitBytes / 4 - limitBytes / 32) / 2),
    liveHistoryBytes: Math.floor(limitBytes / 16),
    liveSendBytes: Math.floor(limitBytes / 16),
    harExportBytes: Math.floor(limitBytes / 16),
    socketBytes: Math.floor(limitBytes / 16),
    harMaxBytes: Math.floor(limitBytes / 4),
    otlpQueueBytes: Math.floor(limitBytes / 32),
  };
}

export type BillingConfig = {
  secretKey: string;
  webhookSecret: string;
  /** Stripe price ids of the card-paid tiers. */
  prices: { "team-20250212": string; "scale-20250212": string };
  /** Stripe's API; overridable so tests can point the client at a local server that plays Stripe. */
  apiUrl: string;
};

export type OAuthProviderConfig = {
  clientId: string;
  clientSecret: string;
  /** Endpoints; overridable so tests can point them at a local server that plays the provider. */
  authorizeUrl: string;
  tokenUrl: string;
  userInfoUrl: string;
  emailsUrl?: string;
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function url(env: Env, name: string, fallback?: string): string | undefined {
  const raw = env[name] || fallback;
  if (!raw) return undefined;
  try {
    new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${raw}"`);
  }
  return raw;
}

const BILLING_VARIABLES = ["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "STRIPE_PRICE_TEAM", "STRIPE_PRICE_SCALE"] as const;

/** All four Stripe variables, or none (billing off). */
function billing(env: Env): BillingConfig | undefined {
  const set = BILLING_VARIABLES.filter((name) => env[name]);
  if (set.length === 0) return undefined;
  if (set.length < BILLING_VARIABLES.length) {
    const missing = BILLING_VARIABLES.filter((name) => !env[name]);
    throw new ConfigError(`billing needs ${BILLING_VARIABLES.join(", ")} together; missing ${missing.join(", ")}`);
  }
  return {
    secretKey: env.STRIPE_SECRET_KEY!,
    webhookSecret: env.STRIPE_WEBHOOK_SECRET!,
    prices: { "team-20250212": env.STRIPE_PRICE_TEAM!, "scale-20250212": env.STRIPE_PRICE_SCALE! },
    apiUrl: url(env, "STRIPE_API_URL", "https://api.stripe.com")!,
  };
}

function provider(
  env: Env,
  prefix: "GOOGLE" | "GITHUB",
  defaults: Omit<OAuthProviderConfig, "clientId" | "clientSecret">,
): OAuthProviderConfig | undefined {
  const clientId = env[`${prefix}_CLIENT_ID`];
  const clientSecret = env[`${prefix}_CLIENT_SECRET`];
  if (!clientId && !clientSecret) return undefined;
  if (!clientId || !clientSecret) {
    throw new ConfigError(`${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET must be set together`);
  }
  return {
    clientId,
    clientSecret,
    authorizeUrl: url(env, `${prefix}_AUTHORIZE_URL`, defaults.authorizeUrl)!,
    tokenUrl: url(env, `${prefix}_TOKEN_URL`, defaults.tokenUrl)!,
    userInfoUrl: url(env, `${prefix}_USERINFO_URL`, defaults.userInfoUrl)!,
    emailsUrl: defaults.emailsUrl ? url(env, `${prefix}_EMAILS_URL`, defaults.emailsUrl) : undefined,
  };
}

/** Reads a secret from DATA_DIR, creating it on first use, so `npm start` needs no configuration. */
function persistedSecret(dataDir: string, file: string): string {
  const path = join(dataDir, file);
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  return secret;
}

export function parseConfig(env: Env = process.env): Config {
  const port = int(env, "PORT", 4000, 0, 65535);
  const dataDir = resolve(env.DATA_DIR || "./data");
  const publicUrl = (url(env, "PUBLIC_URL") ?? `http://localhost:${port}`).replace(/\/+$/, "");
  const databaseUrl = url(env, "DATABASE_URL");
  const sessionSecret = env.SESSION_SECRET || persistedSecret(dataDir, "session-secret");
  if (sessionSecret.length < 16) throw new ConfigError("SESSION_SECRET must be at least 16 characters");
  return {
    port,
    publicUrl,
    dataDir,
    databaseUrl,
    sessionSecret,
    smtpUrl: url(env, "SMTP_URL"),
    mailFrom: env.MAIL_FROM || `Tapscope <no-reply@${new URL(publicUrl).hostname}>`,
    google: provider(env, "GOOGLE", {
      authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
      tokenUrl: "https://oauth2.googleapis.com/token",
      userInfoUrl: "https://openidconnect.googleapis.com/v1/userinfo",
    }),
    github: provider(env, "GITHUB", {
      authorizeUrl: "https://github.com/login/oauth/authorize",
      tokenUrl: "https://github.com/login/oauth/access_token",
      userInfoUrl: "https://api.github.com/user",
      emailsUrl: "https://api.github.com/user/emails",
    }),
    billing: billing(env),
    supportEmail: env.SUPPORT_EMAIL || "support@tapscope.dev",
    clickhouseUrl: url(env, "CLICKHOUSE_URL"),
    clickhouseCluster: clickhouseCluster(env),
    brokerUrl: brokerUrl(env),
    ingestRateLimit: int(env, "INGEST_RATE_LIMIT", 0, 0, 10_000_000),
    retentionDays: int(env, "RETENTION_DAYS", 30, 1, 3650),
    planRetention: env.PLAN_RETENTION === "1" || env.PLAN_RETENTION === "true",
    isProduction: env.NODE_ENV === "production",
    commitHash: env.TAPSCOPE_COMMIT || buildInfo.commit,
    downloadDir: env.DOWNLOAD_DIR ? resolve(env.DOWNLOAD_DIR) : undefined,
    memoryLimitBytes: memoryLimit(env),
    duckdbThreads: int(env, "DUCKDB_THREADS", Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2))), 1, 1024),
    trustProxy: trustProxy(env),
    anonymousLinksPerHour: int(env, "ANONYMOUS_LINKS_PER_HOUR", 100, 0, 1_000_000),
    eventLogMaxBytes: eventLogMaxBytes(env),
    otlp: otlpDestination(env),
    otlpDestinations: otlpDestinations(env),
    maxWebSockets: int(env, "MAX_WEBSOCKETS", 0, 0, 10_000_000),
    webSocketsPerAddress: int(env, "WEBSOCKETS_PER_ADDRESS", 256, 1, 10_000_000),
    webSocketsPerLink: int(env, "WEBSOCKETS_PER_LINK", 1000, 1, 10_000_000),
    alertEvaluationSeconds: int(env, "ALERT_EVALUATION_SECONDS", 60, 1, 3600),
    webhooksToPrivateAddresses: env.WEBHOOKS_TO_PRIVATE_ADDRESSES === "1" || env.WEBHOOKS_TO_PRIVATE_ADDRESSES === "true",
  };
}

/**
 * The standard exporter variables (the OpenTelemetry specification's "OTLP Exporter Configuration"): a base endpoint
 * gets `/v1/traces` appended, a traces endpoint is used as it is; the signal-specific variables win.
 */
function otlpDestination(env: Env): OtlpDestination | undefined {
  const tracesUrl = url(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const baseUrl = url(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const target = tracesUrl ?? (baseUrl ? `${baseUrl.replace(/\/+$/, "")}/v1/traces` : undefined);
  if (!target) return undefined;
  const protocolName = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = env[protocolName] || "http/protobuf";
  if (!(otlpProtocols as readonly string[]).includes(protocol)) {
    throw new ConfigError(`${protocolName} must be http/protobuf or http/json (gRPC is not supported), got "${protocol}"`);
  }
  const headersName = env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ? "OTEL_EXPORTER_OTLP_TRACES_HEADERS" : "OTEL_EXPORTER_OTLP_HEADERS";
  const headers = parseOtlpHeaders(env[headersName] ?? "");
  if ("error" in headers) throw new ConfigError(`${headersName}: ${headers.error} (example: api-key=abc,x-team=ops)`);
  const timeoutName = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" : "OTEL_EXPORTER_OTLP_TIMEOUT";
  return {
    url: target,
    headers: headers.headers,
    protocol: protocol as OtlpProtocol,
    timeoutMs: int(env, timeoutName, 10_000, 1, 600_000),
  };
}

/** `name=value,name2=value2`, values percent-decoded (the specification's W3C Baggage-like form). */
export function parseOtlpHeaders(raw: string): { headers: Array<[string, string]> } | { error: string } {
  const headers: Array<[string, string]> = [];
  for (const part of raw.split(",")) {
    if (!part.trim()) continue;
    const eq = part.indexOf("=");
    if (eq <= 0) return { error: `"${part.trim().slice(0, 40)}" is not name=value` };
    const name = part.slice(0, eq).trim();
    let value: string;
    try {
      value = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return { error: `the value of ${name} is not percent-encoded correctly` };
    }
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return { error: `"${name.slice(0, 40)}" is not a header name` };
    if (/[\r\n\0]/.test(value)) return { error: `the value of ${name} holds a line break` };
    headers.push([name, value]);
  }
  return { headers };
}

function otlpDestinations(env: Env): "any" | "public" {
  const raw = env.OTLP_DESTINATIONS || "any";
  if (raw !== "any" && raw !== "public") throw new ConfigError(`OTLP_DESTINATIONS must be any or public, got "${raw}"`);
  return raw;
}

function eventLogMaxBytes(env: Env): number {
  const raw = env.EVENT_LOG_MAX_BYTES;
  if (raw === undefined || raw === "") return 64 * 1024 ** 2;
  const bytes = parseBytes(raw);
  if (bytes === null || bytes < 1024 ** 2) {
    throw new ConfigError(`EVENT_LOG_MAX_BYTES must be a size of at least 1MiB, like 64MiB or 1GiB, got "${raw}"`);
  }
  return bytes;
}

function clickhouseCluster(env: Env): string | undefined {
  const name = env.CLICKHOUSE_CLUSTER;
  if (!name) return undefined;
  if (!env.CLICKHOUSE_URL) throw new ConfigError("CLICKHOUSE_CLUSTER needs CLICKHOUSE_URL (a node of that cluster)");
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name)) {
    throw new ConfigError(`CLICKHOUSE_CLUSTER must be a cluster name from ClickHouse's remote_servers (letters, digits, _), got "${name}"`);
  }
  return name;
}

function brokerUrl(env: Env): string | undefined {
  const raw = url(env, "BROKER_URL");
  if (!raw) return undefined;
  const protocol = new URL(raw).protocol;
  if (protocol !== "redis:" && protocol !== "rediss:") {
    throw new ConfigError(`BROKER_URL must be a Redis URL (redis://host:6379 or rediss://), got "${protocol}"`);
  }
  return raw;
}

function trustProxy(env: Env): string[] {
  const parsed = parseTrustedProxies(env.TRUST_PROXY ?? "");
  if ("error" in parsed) throw new ConfigError(`TRUST_PROXY: ${parsed.error} (example: loopback,10.0.0.0/8)`);
  return parsed.cidrs;
}

function memoryLimit(env: Env): number {
  const raw = env.MEMORY_LIMIT;
  if (raw === undefined || raw === "") return defaultMemoryLimit();
  const bytes = parseBytes(raw);
  if (bytes === null || bytes < 128 * 1024 ** 2) {
    throw new ConfigError(`MEMORY_LIMIT must be a size of at least 128MiB, like 512MiB or 2GiB, got "${raw}"`);
  }
  return bytes;
}

/** Settings of the capture CLI (`tapscope run|proxy|query|worker`). */
export type AgentConfig = {
  token: string | undefined;
  endpoint: string;
  service: string | undefined;
  linkId: string | undefined;
  /** NO_COLOR set and not empty (no-color.org): terminal output stays plain. */
  isColorRefused: boolean;
};

/**
 * What gives access to captured requests: a namespace token reads every request of its namespace (a query tunnel),
 * a link id opens the link's live view. `tapscope run` keeps them from the program it traces (programs leak their
 * environment: crash reports, debug pages, child processes) unless asked to pass them on.
 */
export const AGENT_CREDENTIAL_VARIABLES = ["TAPSCOPE_TOKEN", "TAPSCOPE_LINK_ID"] as const;

/** The environment without the agent's credentials. */
export function withoutAgentCredentials(env: Env): Env {
  const out: Env = { ...env };
  for (const name of AGENT_CREDENTIAL_VARIABLES) delete out[name];
  return out;
}

export function parseAgentConfig(env: Env = process.env): AgentConfig {
  return {
    token: env.TAPSCOPE_TOKEN || undefined,
    endpoint: (url(env, "TAPSCOPE_ENDPOINT") ?? "http://localhost:4000").replace(/\/+$/, ""),
    service: env.TAPSCOPE_SERVICE || undefined,
    linkId: env.TAPSCOPE_LINK_ID || undefined,
    isColorRefused: Boolean(env.NO_COLOR),
  };
}

/**
 * Where a `tapscope run` that goes on in the background (its program daemonized) writes its messages, best first:
 * the user's runtime directory, the user's state directory, then a directory of the user's own under the temp dir.
 */
export function runLogDirs(env: Env = process.env, uid = process.getuid?.() ?? 0): string[] {
  const dirs: string[] = [];
  if (env.XDG_RUNTIME_DIR && isAbsolute(env.XDG_RUNTIME_DIR)) dirs.push(join(env.XDG_RUNTIME_DIR, "tapscope"));
  const state =
    env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME)
      ? env.XDG_STATE_HOME
      : env.HOME && isAbsolute(env.HOME)
        ? join(env.HOME, ".local/state")
        : "";
  if (state) dirs.push(join(state, "tapscope"));
  dirs.push(join(tmpdir(), `tapscope-${uid}`));
  return dirs;
}

/** Where the traced program runs, from the environment it inherits (Kubernetes downward API, GCP). */
export type HostEnvironment = {
  isKubernetes: boolean;
  kubernetesNamespace: string;
  gcpProject: string;
  gkeClusterName: string;
  gkeClusterLocation: string;
  gkeNodeName: string;
};

export function parseHostEnvironment(env: Env = process.env): HostEnvironment {
  return {
    isKubernetes: Boolean(env.KUBERNETES_SERVICE_HOST),
    kubernetesNamespace: env.POD_NAMESPACE || env.KUBERNETES_NAMESPACE || env.K8S_NAMESPACE || "",
    gcpProject: env.GOOGLE_CLOUD_PROJECT || env.GCP_PROJECT || env.GCLOUD_PROJECT || env.CLOUDSDK_CORE_PROJECT || "",
    gkeClusterName: env.GKE_CLUSTER_NAME || env.CLUSTER_NAME || "",
    gkeClusterLocation: env.GKE_CLUSTER_LOCATION || env.CLUSTER_LOCATION || "",
    gkeNodeName: env.NODE_NAME || env.KUBERNETES_NODE_NAME || "",
  };
}
