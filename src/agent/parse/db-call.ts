/**
 * One database call as a parser saw it: a statement (PostgreSQL, MySQL) or a command (Redis) and its result, raw (not
 * redacted, not normalised: the tracer does that off the data path). Parsers of the three protocols hand these to the
 * connection through `DbSessionHooks`.
 */
export type DbSystem = "postgresql" | "mysql" | "redis";

export type DbCall = {
  eventId: string;
  /** The inbound request the process was serving when the call was made ("" when none). */
  parentEventId: string;
  /** How many inbound requests the process had in flight then: more than one makes the parent a guess (the newest). */
  parentCandidates: number;
  system: DbSystem;
  /** The statement's text (cut to the payload limit), or the Redis command and its arguments. */
  statement: string;
  isStatementCut: boolean;
  /** Redis: the arguments, each as sent (cut), secrets already left out; SQL: none (the text is the statement). */
  args: string[] | null;
  /** Bound parameters in order, decoded to text (cut): [name, value]; null values are "NULL". */
  parameters: Array<[string, string]> | null;
  database: string;
  user: string;
  /** Rows returned or affected; -1 unknown. */
  rows: number;
  errorCode: string;
  errorMessage: string;
  /** Microseconds: the first byte of the call sent, its last byte sent, its result's first and last bytes received. */
  startAt: number;
  sentAt: number;
  firstResultAt: number;
  endAt: number;
  bytesSent: number;
  bytesReceived: number;
  /** The first call on its connection (its event carries the connect time). */
  isFirstOnConnection: boolean;
  /** Anything else worth saying (a prepared statement's name, COPY bytes, why it has no result). */
  tags: Record<string, string> | null;
};

export type DbSessionHooks = {
  newEventId(): string;
  /** The parent of a call made now: the newest inbound request of the process in flight, and how many there were. */
  parent(): { id: string; candidates: number };
  onCall(call: DbCall): void;
};

export type DbSessionOptions = {
  /** Characters of a statement and of each parameter or argument kept. */
  payloadLimit: number;
};

/**
 * A database connection being parsed. "db" while it parses; "encrypted" once the connection turned to encryption the
 * relay does not read (TLS it was not asked to decrypt, GSSAPI: `failReason` says which; its calls are lost, and its
 * event says so); "failed" when the bytes made no sense (`failReason` says how).
 */
export interface DbSession {
  readonly system: DbSystem;
  state: "db" | "encrypted" | "failed";
  failReason: string;
  /** Calls handed on so far. */
  calls: number;
  /** Messages the connection carried without an event each (pub/sub messages, MONITOR lines, notifications). */
  unrecorded: number;
  onData(fromClient: boolean, chunk: Uint8Array, at: number): void;
  /** The connection ended: calls still waiting for a result are handed on as incomplete. */
  onClose(at: number, error?: string): void;
  /** The database and user the connection logged in as, when known. */
  readonly database: string;
  readonly user: string;
}

/** Where a call starts out: everything unknown. */
export function newCall(system: DbSystem, hooks: DbSessionHooks, startAt: number, database: string, user: string): DbCall {
  const parent = hooks.parent();
  return {
    eventId: hooks.newEventId(),
    parentEventId: parent.id,
    parentCandidates: parent.candidates,
    system,
    statement: "",
    isStatementCut: false,
    args: null,
    parameters: null,
    database,
    user,
    rows: -1,
    errorCode: "",
    errorMessage: "",
    startAt,
    sentAt: startAt,
    firstResultAt: 0,
    endAt: 0,
    bytesSent: 0,
    bytesReceived: 0,
    isFirstOnConnection: false,
    tags: null,
  };
}

export function tagCall(call: DbCall, key: string, value: string): void {
  call.tags ??= {};
  call.tags[key] = value;
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** UTF-8 text of `bytes[from, to)`, at most `max` characters kept (an ASCII fast path for the common short case). */
export function textOf(bytes: Uint8Array, from: number, to: number, max: number): { text: string; isCut: boolean } {
  const end = Math.min(to, from + max * 4);
  let ascii = true;
  const n = end - from;
  if (n <= 64) {
    for (let i = from; i < end; i++) {
      if (bytes[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      const text = String.fromCharCode.apply(null, bytes.subarray(from, Math.min(end, from + max)) as unknown as number[]);
      return { text, isCut: to - from > max };
    }
  }
  const text = utf8.decode(bytes.subarray(from, end));
  if (text.length > max) return { text: text.slice(0, max), isCut: true };
  return { text, isCut: end < to };
}

/** Bytes shown as hex, at most `max` bytes: `\x0102ab…`. */
export function hexOf(bytes: Uint8Array, from: number, to: number, max: number): string {
  let out = "\\x";
  const end = Math.min(to, from + max);
  for (let i = from; i < end; i++) out += bytes[i]!.toString(16).padStart(2, "0");
  return to > end ? `${out}…` : out;
}

/**
 * A length-prefixed message whose body may span reads: the bytes kept of it (at most `cap`), gathered; the rest only
 * counted. Parsers read whole messages through it without holding more than `cap` bytes per message.
 */
export class Gather {
  buf: Uint8Array;
  length = 0;

  constructor(initial = 256) {
    this.buf = new Uint8Array(initial);
  }

  reset(): void {
    this.length = 0;
  }

  /** Appends `bytes[from, to)` up to `cap` kept bytes in all. */
  add(bytes: Uint8Array, from: number, to: number, cap: number): void {
    const n = Math.min(to - from, cap - this.length);
    if (n <= 0) return;
    if (this.length + n > this.buf.length) {
      const grown = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
      grown.set(this.buf.subarray(0, this.length));
      this.buf = grown;
    }
    this.buf.set(bytes.subarray(from, from + n), this.length);
    this.length += n;
  }

  /** Drops a large buffer once a long message is done, so a connection does not keep it. */
  shrink(): void {
    if (this.buf.length > 64 * 1024) this.buf = new Uint8Array(256);
    this.length = 0;
  }
}
