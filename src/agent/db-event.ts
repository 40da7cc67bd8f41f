import { type CapturedEvent, eventFields } from "~/lib/protocol/event.ts";
import { TRUNCATION_MARKER } from "~/lib/protocol/publish.ts";
import { normalizeSql, type SqlDialect, secretSqlValues, sqlOperation, tokenizeSql } from "~/lib/sql.ts";
import { baseEvent, type EventContext, type ProcessInfo, span } from "./event.ts";
import type { DbCall } from "./parse/db-call.ts";
import { isSensitiveJsonKey, maskSecret, mayNameSecret, type RedactMode } from "./redact.ts";
import type { ConnectionInfo } from "./relay/observer.ts";

/**
 * One database call -> the published event (kind "db"), off the data path: the statement's operation and normalised
 * form, redaction of the values bound to secret-looking columns (`password = $1`, an INSERT's password column) and of
 * Redis values stored under secret-looking keys or fields (`SET session:...`, `HSET user:1 password ...`), by the name
 * rule bodies use (docs/adr/0014-redaction-rules.md). Authentication never reaches here: the parsers leave it out.
 */
const maxStatement = (eventFields.byName.get("db_statement")?.max ?? 16384) as number;

export function buildDbEvent(call: DbCall, conn: ConnectionInfo, proc: ProcessInfo, ctx: EventContext): CapturedEvent {
  const e = baseEvent(conn, proc, ctx);
  e.protocol = "db";
  e.event_id = call.eventId;
  e.parent_event_id = call.parentEventId;
  e.time = Math.round(call.startAt);
  e.db_system = call.system;
  e.db_name = call.database;
  e.db_user = call.user;
  e.db_rows = call.rows;
  e.db_error_code = call.errorCode;
  e.db_error_message = call.errorMessage;
  const tags = e.tags;
  if (call.tags) Object.assign(tags, call.tags);
  const operation = tags.operation;
  delete tags.operation;
  if (call.system === "redis") redisFields(e, call, ctx.redact);
  else sqlFields(e, call, call.system, ctx.redact);
  if (operation) e.db_operation = operation;
  // Cut by the parser at the payload limit: marked as the server marks what it cuts.
  if (call.isStatementCut && e.db_statement.length + TRUNCATION_MARKER.length <= maxStatement) e.db_statement += TRUNCATION_MARKER;
  e.bytes_sent = call.bytesSent;
  e.bytes_received = call.bytesReceived;
  const end = call.endAt || call.startAt;
  e.http_duration = Math.max(0, Math.round(end - call.startAt));
  e.timing_send = span(call.startAt, call.sentAt);
  if (call.firstResultAt) {
    e.timing_wait = Math.max(0, Math.round(call.firstResultAt - call.sentAt));
    e.timing_receive = span(call.firstResultAt, end);
  }
  if (call.isFirstOnConnection && conn.connectedAt >= conn.startedAt && conn.startedAt > 0) {
    e.timing_connect = Math.round(conn.connectedAt - conn.startedAt);
  }
  if (call.parentCandidates > 1) {
    // Several requests of this process were in flight: which one made the call cannot be told from the bytes.
    tags.parent_guess = `the newest of ${call.parentCandidates} requests in flight in this process`;
  }
  if (conn.tls) {
    e.tls_server_name = conn.tls.serverName;
    tags.tls = "decrypted";
    if (conn.tls.alpn) tags.tls_alpn = conn.tls.alpn;
    if (call.isFirstOnConnection) e.timing_tls = span(conn.tls.handshakeStartedAt, conn.tls.handshakeDoneAt);
  }
  return e;
}

const noSecrets: ReturnType<typeof secretSqlValues> = { literals: new Set(), params: new Set() };

/** What a statement's text alone decides, kept for statements sent again and again (prepared, or from an ORM). */
type StatementFacts = {
  tokens: ReturnType<typeof tokenizeSql>;
  operation: string;
  normalized: string;
  secrets: ReturnType<typeof secretSqlValues>;
};
const statementCache = new Map<string, StatementFacts>();
const STATEMENT_CACHE_ENTRIES = 1024;
const STATEMENT_CACHE_MAX_CHARS = 4096;

function statementFacts(text: string, dialect: SqlDialect): StatementFacts {
  const key = `${dialect}\0${text}`;
  const known = text.length <= STATEMENT_CACHE_MAX_CHARS ? statementCache.get(key) : undefined;
  if (known) return known;
  const tokens = tokenizeSql(text, dialect);
  const facts: StatementFacts = {
    tokens,
    operation: sqlOperation(text, dialect, tokens),
    normalized: normalizeSql(text, dialect, tokens),
    secrets: mayNameSecret(text) ? secretSqlValues(text, tokens, isSensitiveJsonKey) : noSecrets,
  };
  if (text.length <= STATEMENT_CACHE_MAX_CHARS) {
    // Bounded the simple way: a full cache starts over (statements with literals in them rarely repeat anyway).
    if (statementCache.size >= STATEMENT_CACHE_ENTRIES) statementCache.clear();
    statementCache.set(key, facts);
  }
  return facts;
}

function sqlFields(e: CapturedEvent, call: DbCall, dialect: SqlDialect, mode: RedactMode): void {
  const text = call.statement;
  const { tokens, operation, normalized, secrets } = statementFacts(text, dialect);
  e.db_operation = operation;
  e.db_statement_normalized = normalized;
  let parameters = call.parameters ?? [];
  if (mode === "keep") {
    e.db_statement = text;
    e.db_parameters = parameters;
    return;
  }
  if (secrets.literals.size === 0) e.db_statement = text;
  else {
    let out = "";
    let at = 0;
    for (const i of [...secrets.literals].sort((a, b) => a - b)) {
      const t = tokens[i]!;
      const literal = text.slice(t.start, t.end);
      const quote = literal.indexOf("'");
      const value = quote === -1 ? literal : literal.slice(quote + 1, -1);
      out += `${text.slice(at, t.start)}'${maskSecret(value, mode)}'`;
      at = t.end;
    }
    e.db_statement = out + text.slice(at);
  }
  if (secrets.params.size > 0) {
    parameters = parameters.map(([name, value]) =>
      secrets.params.has(name) && value !== "NULL" ? [name, maskSecret(value, mode)] : [name, value],
    );
  }
  e.db_parameters = parameters;
}

/** Commands whose operation is the command and its subcommand ("CONFIG GET", "CLIENT SETNAME"). */
const containers = new Set([
  "ACL",
  "CLIENT",
  "CLUSTER",
  "COMMAND",
  "CONFIG",
  "FUNCTION",
  "LATENCY",
  "MEMORY",
  "MODULE",
  "OBJECT",
  "PUBSUB",
  "SCRIPT",
  "SLOWLOG",
  "XGROUP",
  "XINFO",
]);
/** Commands without a key as their first argument. */
const keyless = new Set([
  "PING",
  "ECHO",
  "INFO",
  "AUTH",
  "HELLO",
  "SELECT",
  "FLUSHDB",
  "FLUSHALL",
  "DBSIZE",
  "MULTI",
  "EXEC",
  "DISCARD",
  "TIME",
  "QUIT",
  "RESET",
  "SCAN",
  "KEYS",
  "WAIT",
  "EVAL",
  "EVALSHA",
  "FCALL",
  "SWAPDB",
  "MONITOR",
  "SAVE",
  "BGSAVE",
  "LASTSAVE",
  "ROLE",
  "READONLY",
  "READWRITE",
  ...containers,
]);
/** Where a command's first value is (SETEX key seconds value); by default right after the key. */
const valueAt: Record<string, number> = { SETEX: 3, PSETEX: 3, SETRANGE: 3, LSET: 3, LINSERT: 4, ZADD: 2 };
/** Commands whose arguments are key-value or field-value pairs from this index on. */
const pairsFrom: Record<string, number> = { MSET: 1, MSETNX: 1, HSET: 2, HMSET: 2, HSETNX: 2 };

function redisFields(e: CapturedEvent, call: DbCall, mode: RedactMode): void {
  const args = call.args ?? [];
  const command = (args[0] ?? "").toUpperCase();
  const hasSub = containers.has(command) && args.length > 1;
  e.db_operation = (hasSub ? `${command} ${args[1]!.toUpperCase()}` : command).slice(0, 64);
  const shown = mode === "keep" ? args : redactRedis(command, args, mode);
  e.db_statement = shown.map(quoteArg).join(" ");
  const first = hasSub ? 2 : 1;
  const isKeyed = !keyless.has(command) && args.length > first;
  const parts = [e.db_operation];
  if (isKeyed) parts.push(keyTemplate(args[first]!));
  if (args.length > first + (isKeyed ? 1 : 0)) parts.push("?");
  e.db_statement_normalized = parts.join(" ");
}

/** Values kept under a secret-looking key, or paired with a secret-looking field or key, masked. */
function redactRedis(command: string, args: string[], mode: RedactMode): string[] {
  if (args.length < 3 || keyless.has(command)) return args;
  let out: string[] | null = null;
  const mask = (i: number) => {
    out ??= args.slice();
    out[i] = maskSecret(args[i]!, mode);
  };
  const pairs = pairsFrom[command];
  const isSecretKey = isSensitiveJsonKey(args[1]!);
  if (pairs !== undefined) {
    for (let i = pairs; i + 1 < args.length; i += 2) if (isSecretKey || isSensitiveJsonKey(args[i]!)) mask(i + 1);
    return out ?? args;
  }
  if (!isSecretKey) return args;
  if (command === "SET" || command === "GETSET" || command === "SETNX" || command === "APPEND") mask(2);
  else {
    // Lists, sets, sorted sets, streams under a secret key: every value after the key.
    for (let i = valueAt[command] ?? 2; i < args.length; i++) mask(i);
  }
  return out ?? args;
}

/** An argument as redis-cli prints it: bare when plain, else double-quoted with escapes. */
function quoteArg(arg: string): string {
  if (arg !== "" && /^[\x21-\x7e\u00a0-\uffff]+$/.test(arg) && !/["'\\]/.test(arg)) return arg;
  return JSON.stringify(arg);
}

/** A key with its variable parts replaced: "session:3f2a9c" and "session:77" both read "session:?". */
function keyTemplate(key: string): string {
  return key.replace(keyPart, (part) => (/\d/.test(part) || /^[0-9a-f]{16,}$/i.test(part) ? "?" : part)).slice(0, 256);
}

/** The parts of a key between its separators. */
const keyPart = /[^:/.{}|#-]+/g;
