import { splitSqlStatements } from "~/lib/sql.ts";
import {
  type DbCall,
  type DbSession,
  type DbSessionHooks,
  type DbSessionOptions,
  Gather,
  hexOf,
  newCall,
  tagCall,
  textOf,
} from "./db-call.ts";

/**
 * The PostgreSQL frontend/backend protocol 3.x, both directions, as the client's outbound connection carries it:
 * startup (user, database and application name kept; passwords and SASL exchanges never read), the simple query
 * protocol (each statement of a query string its own call), the extended protocol (Parse/Bind/Describe/Execute/Sync,
 * named and unnamed statements resolved to their text, parameters decoded for the common types, pipelined Executes
 * matched to their results in order, those skipped after an error said so), CommandComplete tags, ErrorResponse,
 * COPY counted in bytes. An SSLRequest answered `S` on a connection the relay does not decrypt turns it "encrypted".
 *
 * Message bodies are read in place when a read holds them whole; a body split across reads is gathered only as far as
 * the parser needs it (statements and parameters up to the payload limit), never row data.
 */
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

/** Named statements remembered per connection; beyond this the oldest is forgotten (its calls say so). */
const MAX_STATEMENTS = 1024;
/** Bytes of a Bind message read for its parameters. */
const MAX_BIND_BYTES = 256 * 1024;

type Statement = { text: string; isCut: boolean; types: number[] };
type Portal = { statement: Statement | null; statementName: string; parameters: Array<[string, string]> | null };
/** Client messages of the extended protocol since the last Execute or Sync: one call's Parse, Bind, Describe. */
type Group = { startAt: number; bytes: number; call: DbCall | null };

type Op =
  | { k: "parse"; group: Group; statement: Statement }
  | { k: "bind"; group: Group }
  | { k: "describe"; group: Group; statement: Statement | null }
  | { k: "execute"; group: Group; call: DbCall }
  | { k: "close" | "sync" | "function" }
  | { k: "query"; query: SimpleQuery };

/** A simple query: its statements, each one's call made as its result arrives. */
type SimpleQuery = {
  startAt: number;
  bytes: number;
  statements: string[];
  isCut: boolean;
  /** The statement whose result comes next. */
  next: number;
  current: DbCall | null;
  failed: boolean;
};

export class PostgresSession implements DbSession {
  readonly system = "postgresql" as const;
  state: "db" | "encrypted" | "failed" = "db";
  failReason = "";
  calls = 0;
  unrecorded = 0;
  database = "";
  user = "";
  private readonly client = new Reader(true);
  private readonly server = new Reader(false);
  /** The server's one-byte answer to an SSLRequest or GSSENCRequest is next. */
  private answerPending: "ssl" | "gss" | null = null;
  private readonly ops: Op[] = [];
  private opsHead = 0;
  private readonly statements = new Map<string, Statement>();
  private readonly portals = new Map<string, Portal>();
  private group: Group | null = null;
  /** The call whose result is streaming (rows, COPY), for bytes and counts. */
  private copyCall: DbCall | null = null;
  private isStarted = false;
  private hasCalls = false;
  private startupAt = 0;
  /** When the last statement's result ended: the next statement of the same query string starts there. */
  private lastEnd = 0;
  private readonly limit: number;
  private readonly onClient = (type: number, body: Uint8Array, length: number, at: number) => this.clientMessage(type, body, length, at);
  private readonly onServer = (type: number, body: Uint8Array, length: number, at: number) => this.serverMessage(type, body, length, at);
  private readonly keepClient = (type: number, length: number) => this.clientKeep(type, length);
  private readonly keepServer = (type: number, length: number) => serverKeep(type, length);

  constructor(
    private readonly hooks: DbSessionHooks,
    options: DbSessionOptions,
  ) {
    this.limit = Math.max(0, options.payloadLimit);
  }

  onData(fromClient: boolean, chunk: Uint8Array, at: number): void {
    if (this.state !== "db") return;
    try {
      if (fromClient) this.client.feed(chunk, at, this.onClient, this.keepClient);
      else {
        let from = 0;
        if (this.answerPending && chunk.length > 0) {
          this.answer(chunk[0]!);
          from = 1;
          if (this.state !== "db") return;
        }
        if (from < chunk.length) this.server.feed(from === 0 ? chunk : chunk.subarray(from), at, this.onServer, this.keepServer);
      }
    } catch (error) {
      this.fail(error instanceof ProtocolError ? error.message : `parser error: ${String(error)}`);
    }
  }

  onClose(at: number, error?: string): void {
    if (this.state === "failed") return;
    // Calls the server never answered: handed on as incomplete.
    const reason = error ? `the connection ended (${error}) before the result` : "the connection closed before the result";
    for (let i = this.opsHead; i < this.ops.length; i++) {
      const op = this.ops[i]!;
      if (op.k === "execute") this.finishIncomplete(op.call, at, reason);
      else if (op.k === "query") {
        const query = op.query;
        if (query.current) this.finishIncomplete(query.current, at, reason);
        else if (query.next < query.statements.length) {
          const call = this.statementCall(query, query.next, query.startAt);
          this.finishIncomplete(call, at, reason);
        }
      }
    }
    this.ops.length = 0;
    this.opsHead = 0;
  }

  private finishIncomplete(call: DbCall, at: number, reason: string): void {
    call.endAt = at;
    tagCall(call, "incomplete", reason);
    this.emit(call);
  }

  private fail(reason: string): void {
    this.state = "failed";
    this.failReason = reason.slice(0, 200);
    this.ops.length = 0;
  }

  private emit(call: DbCall): void {
    if (!this.hasCalls) {
      this.hasCalls = true;
      call.isFirstOnConnection = true;
    }
    this.calls++;
    this.hooks.onCall(call);
  }

  private answer(byte: number): void {
    const kind = this.answerPending;
    this.answerPending = null;
    if (byte === 0x53 && kind === "ssl") {
      this.state = "encrypted";
      this.failReason = "TLS";
    } else if (byte === 0x47 && kind === "gss") {
      this.state = "encrypted";
      this.failReason = "GSSAPI encryption";
    } else if (byte !== 0x4e) {
      // Not S, G or N: a server too old for SSLRequest answers with an ErrorResponse; read it as one.
      this.server.feed(Uint8Array.of(byte), 0, this.onServer, this.keepServer);
    }
  }

  private clientKeep(type: number, length: number): number {
    switch (type) {
      case 0: // startup packets
        return Math.min(length, 8192);
      case 0x51: // Q
      case 0x50: // P
        return Math.min(length, this.limit * 4 + 64);
      case 0x42: // B
        return Math.min(length, MAX_BIND_BYTES);
      case 0x44: // D
      case 0x45: // E
      case 0x43: // C
        return Math.min(length, 1024);
      default:
        // Passwords and SASL (p), COPY data (d), everything else: counted, never read.
        return 0;
    }
  }

  private clientMessage(type: number, body: Uint8Array, length: number, at: number): void {
    const wire = length + (type === 0 ? 4 : 5);
    switch (type) {
      case 0:
        this.startupMessage(body, at);
        return;
      case 0x51:
        this.simpleQuery(body, wire, at);
        return;
      case 0x50: {
        // Parse: name, text, parameter types.
        const group = this.groupAt(at, wire);
        const nameEnd = cstringEnd(body, 0);
        const name = latin1(body, 0, nameEnd);
        const textEnd = cstringEnd(body, nameEnd + 1);
        const read = textOf(body, nameEnd + 1, textEnd, this.limit);
        const types: number[] = [];
        if (textEnd + 3 <= body.length) {
          const count = readInt16(body, textEnd + 1);
          for (let i = 0, p = textEnd + 3; i < count && p + 4 <= body.length; i++, p += 4) types.push(readInt32(body, p) >>> 0);
        }
        const statement: Statement = { text: read.text, isCut: read.isCut || textEnd >= body.length, types };
        this.remember(name, statement);
        this.push({ k: "parse", group, statement });
        return;
      }
      case 0x42: {
        const group = this.groupAt(at, wire);
        this.bind(body);
        this.push({ k: "bind", group });
        return;
      }
      case 0x44: {
        const group = this.groupAt(at, wire);
        const name = latin1(body, 1, cstringEnd(body, 1));
        this.push({ k: "describe", group, statement: body[0] === 0x53 ? (this.statements.get(name) ?? null) : null });
        return;
      }
      case 0x45: {
        const group = this.groupAt(at, wire);
        this.group = null;
        const portalName = latin1(body, 0, cstringEnd(body, 0));
        const call = this.callFor(this.portals.get(portalName) ?? null, group.startAt);
        call.sentAt = at;
        call.bytesSent = group.bytes;
        group.call = call;
        this.push({ k: "execute", group, call });
        return;
      }
      case 0x53: // Sync
        this.group = null;
        this.push({ k: "sync" });
        return;
      case 0x43: {
        // Close a statement or portal: forgotten now (the server answers CloseComplete).
        const name = latin1(body, 1, cstringEnd(body, 1));
        if (body[0] === 0x53) this.statements.delete(name);
        else this.portals.delete(name);
        this.push({ k: "close" });
        return;
      }
      case 0x46:
        this.push({ k: "function" });
        return;
      case 0x64: // CopyData
        if (this.copyCall) {
          this.copyCall.bytesSent += wire;
          this.countCopy(this.copyCall, length);
        }
        return;
      case 0x63: // CopyDone
      case 0x66: // CopyFail
        if (this.copyCall) this.copyCall.bytesSent += wire;
        return;
      case 0x48: // Flush
      case 0x70: // password, SASL: never read
      case 0x58: // Terminate
        return;
      default:
        throw new ProtocolError(`unexpected message ${describeType(type)} from the client`);
    }
  }

  private startupMessage(body: Uint8Array, at: number): void {
    if (body.length < 4) throw new ProtocolError("startup packet too short");
    const code = readInt32(body, 0);
    if (code === SSL_REQUEST) {
      this.answerPending = "ssl";
      return;
    }
    if (code === GSSENC_REQUEST) {
      this.answerPending = "gss";
      return;
    }
    if (code === CANCEL_REQUEST) {
      // Cancels another connection's query: no call of its own.
      this.unrecorded++;
      this.client.isStartup = false;
      return;
    }
    if (code >>> 16 !== 3) throw new ProtocolError(`unsupported protocol version ${code >>> 16}.${code & 0xffff}`);
    this.client.isStartup = false;
    this.startupAt = at;
    let p = 4;
    while (p < body.length && body[p] !== 0) {
      const keyEnd = cstringEnd(body, p);
      const valueEnd = cstringEnd(body, keyEnd + 1);
      const key = latin1(body, p, keyEnd);
      const value = textOf(body, keyEnd + 1, valueEnd, 256).text;
      if (key === "user") this.user = value;
      else if (key === "database") this.database = value;
      p = valueEnd + 1;
    }
    this.database ||= this.user;
  }

  private simpleQuery(body: Uint8Array, wire: number, at: number): void {
    this.group = null;
    const end = cstringEnd(body, 0);
    const read = textOf(body, 0, end, this.limit);
    const isCut = read.isCut || end >= body.length;
    const text = read.text;
    // Several statements only when a semicolon is followed by more than space: most query strings hold one.
    const semi = text.indexOf(";");
    const statements = semi !== -1 && /\S/.test(text.slice(semi + 1)) ? splitSqlStatements(text, "postgresql") : [text];
    this.push({
      k: "query",
      query: {
        startAt: at,
        bytes: wire,
        statements: statements.length > 0 ? statements : [text],
        isCut,
        next: 0,
        current: null,
        failed: false,
      },
    });
  }

  private bind(body: Uint8Array): void {
    const portalEnd = cstringEnd(body, 0);
    const portalName = latin1(body, 0, portalEnd);
    const nameEnd = cstringEnd(body, portalEnd + 1);
    const statementName = latin1(body, portalEnd + 1, nameEnd);
    const statement = this.statements.get(statementName) ?? null;
    let p = nameEnd + 1;
    const formatCount = p + 2 <= body.length ? readInt16(body, p) : 0;
    p += 2;
    const formats: number[] = [];
    for (let i = 0; i < formatCount && p + 2 <= body.length; i++, p += 2) formats.push(readInt16(body, p));
    const count = p + 2 <= body.length ? readInt16(body, p) : 0;
    p += 2;
    const parameters: Array<[string, string]> = [];
    for (let i = 0; i < count; i++) {
      const name = `$${i + 1}`;
      if (p + 4 > body.length) {
        parameters.push([name, "<not captured>"]);
        continue;
      }
      const size = readInt32(body, p);
      p += 4;
      if (size < 0) {
        parameters.push([name, "NULL"]);
        continue;
      }
      const isBinary = (formats.length === 1 ? formats[0] : formats[i]) === 1;
      const end = Math.min(body.length, p + size);
      const value =
        end < p + size
          ? p < body.length
            ? `${decodeParameter(body, p, end, isBinary, statement?.types[i] ?? 0, this.limit)}…`
            : "<not captured>"
          : decodeParameter(body, p, end, isBinary, statement?.types[i] ?? 0, this.limit);
      parameters.push([name, value]);
      p += size;
    }
    this.portals.set(portalName, { statement, statementName, parameters: count > 0 ? parameters : null });
    if (this.portals.size > MAX_STATEMENTS) this.portals.delete(this.portals.keys().next().value as string);
  }

  private callFor(portal: Portal | null, startAt: number): DbCall {
    const call = newCall("postgresql", this.hooks, startAt, this.database, this.user);
    const statement = portal?.statement ?? null;
    if (statement) {
      call.statement = statement.text;
      call.isStatementCut = statement.isCut;
    } else {
      tagCall(
        call,
        "statement",
        portal ? `prepared statement "${portal.statementName}" was prepared before it could be read` : "portal unknown",
      );
    }
    if (portal?.statementName) tagCall(call, "prepared", portal.statementName);
    call.parameters = portal?.parameters ?? null;
    return call;
  }

  private remember(name: string, statement: Statement): void {
    this.statements.delete(name);
    this.statements.set(name, statement);
    if (this.statements.size > MAX_STATEMENTS) this.statements.delete(this.statements.keys().next().value as string);
  }

  private groupAt(at: number, wire: number): Group {
    const group = this.group ?? { startAt: at, bytes: 0, call: null };
    group.bytes += wire;
    this.group = group;
    return group;
  }

  private push(op: Op): void {
    if (this.ops.length - this.opsHead > 100_000) throw new ProtocolError("more than 100000 messages waiting for the server");
    this.ops.push(op);
  }

  private head(): Op | undefined {
    return this.ops[this.opsHead];
  }

  private shift(): void {
    this.opsHead++;
    if (this.opsHead === this.ops.length) {
      this.ops.length = 0;
      this.opsHead = 0;
    } else if (this.opsHead > 1024) {
      this.ops.splice(0, this.opsHead);
      this.opsHead = 0;
    }
  }

  private serverMessage(type: number, body: Uint8Array, length: number, at: number): void {
    const wire = length + 5;
    const op = this.head();
    switch (type) {
      case 0x31: // ParseComplete
      case 0x32: // BindComplete
        if (op?.k !== (type === 0x31 ? "parse" : "bind")) throw this.unexpected(type);
        this.received(op, wire, at);
        this.shift();
        return;
      case 0x33: // CloseComplete
        if (op?.k !== "close") throw this.unexpected(type);
        this.shift();
        return;
      case 0x74: // ParameterDescription: the statement's types, for the Binds that follow.
        if (op?.k !== "describe") throw this.unexpected(type);
        if (op.statement && body.length >= 2) {
          const count = readInt16(body, 0);
          const types: number[] = [];
          for (let i = 0, p = 2; i < count && p + 4 <= body.length; i++, p += 4) types.push(readInt32(body, p) >>> 0);
          op.statement.types = types;
        }
        this.received(op, wire, at);
        return;
      case 0x54: // RowDescription
      case 0x6e: // NoData
        if (op?.k === "describe") {
          this.received(op, wire, at);
          this.shift();
          return;
        }
        if (op?.k === "query") {
          this.statementResult(op.query, at, wire);
          return;
        }
        throw this.unexpected(type);
      case 0x44: // DataRow
        if (op?.k === "execute") {
          this.received(op, wire, at);
          op.call.rows = op.call.rows < 0 ? 1 : op.call.rows + 1;
          return;
        }
        if (op?.k === "query") {
          const call = this.statementResult(op.query, at, wire);
          call.rows = call.rows < 0 ? 1 : call.rows + 1;
          return;
        }
        throw this.unexpected(type);
      case 0x43: // CommandComplete
      case 0x49: // EmptyQueryResponse
      case 0x73: {
        // PortalSuspended
        const tag = type === 0x43 ? latin1(body, 0, cstringEnd(body, 0)) : "";
        if (op?.k === "execute") {
          this.received(op, wire, at);
          this.complete(op.call, tag, at);
          if (type === 0x73) tagCall(op.call, "suspended", "the portal's row limit was reached");
          this.emit(op.call);
          this.shift();
          return;
        }
        if (op?.k === "query" && type !== 0x73) {
          const call = this.statementResult(op.query, at, wire);
          this.complete(call, tag, at);
          op.query.current = null;
          op.query.next++;
          this.emit(call);
          return;
        }
        throw this.unexpected(type);
      }
      case 0x45: // ErrorResponse
        this.error(op, body, wire, at);
        return;
      case 0x5a: // ReadyForQuery
        this.copyCall = null;
        if (op?.k === "sync" || op?.k === "function") this.shift();
        else if (op?.k === "query") {
          this.finishQuery(op.query, at);
          this.shift();
        } else if (op) throw this.unexpected(type);
        this.isStarted = true;
        return;
      case 0x47: // CopyInResponse
      case 0x48: {
        // CopyOutResponse
        const call = op?.k === "execute" ? op.call : op?.k === "query" ? this.statementResult(op.query, at, wire) : null;
        if (!call) throw this.unexpected(type);
        this.copyCall = call;
        tagCall(call, "copy", type === 0x47 ? "in" : "out");
        return;
      }
      case 0x64: // CopyData
        if (this.copyCall) {
          this.copyCall.bytesReceived += wire;
          this.countCopy(this.copyCall, length);
        }
        return;
      case 0x63: // CopyDone
        if (this.copyCall) this.copyCall.bytesReceived += wire;
        return;
      case 0x57: // CopyBothResponse: replication, not calls.
        throw new ProtocolError("streaming replication (CopyBoth) is not parsed");
      case 0x56: // FunctionCallResponse
        return;
      case 0x41: // NotificationResponse (LISTEN/NOTIFY): counted
        this.unrecorded++;
        return;
      case 0x52: // Authentication*: never read
      case 0x53: // ParameterStatus
      case 0x4b: // BackendKeyData
      case 0x4e: // NoticeResponse
      case 0x76: // NegotiateProtocolVersion
        return;
      default:
        throw new ProtocolError(`unexpected message ${describeType(type)} from the server`);
    }
  }

  private unexpected(type: number): ProtocolError {
    const op = this.head();
    return new ProtocolError(`unexpected ${describeType(type)} from the server${op ? ` (waiting for the answer to ${op.k})` : ""}`);
  }

  private received(op: Op, wire: number, at: number): void {
    if (op.k === "execute") {
      op.call.bytesReceived += wire;
      if (!op.call.firstResultAt) op.call.firstResultAt = at;
      return;
    }
    // The answers to a call's Parse and Bind are part of its result.
    const group = "group" in op ? op.group : null;
    const call = group?.call ?? this.nextExecute(op)?.call;
    if (!call) return;
    call.bytesReceived += wire;
    if (!call.firstResultAt) call.firstResultAt = at;
  }

  /** The Execute waiting after `op` before the next Sync. */
  private nextExecute(op: Op): Extract<Op, { k: "execute" }> | null {
    for (let i = this.ops.indexOf(op, this.opsHead); i >= 0 && i < this.ops.length; i++) {
      const o = this.ops[i]!;
      if (o.k === "execute") return o;
      if (o.k === "sync" || o.k === "query") return null;
    }
    return null;
  }

  /** The call of the statement whose result the server is sending. */
  private statementResult(query: SimpleQuery, at: number, wire: number): DbCall {
    let call = query.current;
    if (!call) {
      const startAt = query.next === 0 ? query.startAt : Math.max(query.startAt, this.lastEnd);
      call = this.statementCall(query, query.next, startAt);
      if (query.next === 0) call.bytesSent = query.bytes;
      call.firstResultAt = at;
      query.current = call;
    }
    call.bytesReceived += wire;
    return call;
  }

  private statementCall(query: SimpleQuery, index: number, startAt: number): DbCall {
    const call = newCall("postgresql", this.hooks, startAt, this.database, this.user);
    call.statement = query.statements[index] ?? query.statements[query.statements.length - 1] ?? "";
    call.isStatementCut = query.isCut && index >= query.statements.length - 1;
    if (query.statements.length > 1) tagCall(call, "statement_of_query", `${index + 1} of ${query.statements.length}`);
    return call;
  }

  private complete(call: DbCall, tag: string, at: number): void {
    call.endAt = at;
    this.lastEnd = at;
    if (!call.firstResultAt) call.firstResultAt = at;
    const rows = rowsOfTag(tag);
    if (rows >= 0) call.rows = rows;
  }

  private error(op: Op | undefined, body: Uint8Array, wire: number, at: number): void {
    const fields = errorFields(body, this.limit);
    if (!this.isStarted && !op) {
      // Refused at startup (a wrong password, an unknown database): the connection's one call says why.
      const call = newCall("postgresql", this.hooks, this.startupAt || at, this.database, this.user);
      call.statement = "";
      call.endAt = at;
      call.firstResultAt = at;
      call.bytesReceived = wire;
      call.errorCode = fields.code;
      call.errorMessage = fields.message;
      tagCall(call, "operation", "CONNECT");
      this.emit(call);
      return;
    }
    if (!op) return; // a FATAL the server sends before closing (shutdown): the connection's end says it.
    if (op.k === "query") {
      const call = this.statementResult(op.query, at, wire);
      call.errorCode = fields.code;
      call.errorMessage = fields.message;
      call.endAt = at;
      this.lastEnd = at;
      op.query.current = null;
      op.query.next++;
      op.query.failed = true;
      this.emit(call);
      return;
    }
    // Extended protocol: the error belongs to the call being prepared or executed; the server then skips everything up
    // to the next Sync, so the Executes among those have no result.
    let failed: DbCall | null = null;
    const skipped: DbCall[] = [];
    while (this.head() && this.head()!.k !== "sync") {
      const o = this.head()!;
      if (o.k === "execute") {
        if (!failed) failed = o.call;
        else skipped.push(o.call);
      } else if (!failed && o.k === "parse" && !this.nextExecute(o)) {
        // A statement prepared on its own (no Execute before the Sync): its failure is a call of its own.
        failed = newCall("postgresql", this.hooks, o.group.startAt, this.database, this.user);
        failed.statement = o.statement.text;
        failed.bytesSent = o.group.bytes;
        tagCall(failed, "prepare", "only prepared, not executed");
      }
      this.shift();
    }
    if (!failed) return;
    failed.bytesReceived += wire;
    if (!failed.firstResultAt) failed.firstResultAt = at;
    failed.endAt = at;
    failed.errorCode = fields.code;
    failed.errorMessage = fields.message;
    this.emit(failed);
    for (const call of skipped) {
      call.endAt = at;
      tagCall(call, "skipped", "not run: an earlier statement of the same pipeline failed");
      this.emit(call);
    }
  }

  private finishQuery(query: SimpleQuery, at: number): void {
    if (query.current) {
      // A result that never completed (COPY refused, a protocol oddity): handed on as it is.
      query.current.endAt = at;
      this.emit(query.current);
      query.current = null;
      query.next++;
    }
    if (!query.failed) return;
    for (let i = query.next; i < query.statements.length; i++) {
      const call = this.statementCall(query, i, at);
      call.endAt = at;
      tagCall(call, "skipped", "not run: an earlier statement of the same query failed");
      this.emit(call);
    }
  }

  private countCopy(call: DbCall, length: number): void {
    const tags = call.tags ?? {};
    call.tags = tags;
    tags.copy_bytes = String(Number(tags.copy_bytes ?? "0") + length);
  }
}

/** Server messages whose bodies are read: the rest (rows, COPY data, authentication) only counted. */
function serverKeep(type: number, length: number): number {
  switch (type) {
    case 0x43: // CommandComplete
    case 0x45: // ErrorResponse
    case 0x74: // ParameterDescription
      return Math.min(length, 16 * 1024);
    default:
      return 0;
  }
}

class ProtocolError extends Error {}

/**
 * One direction's messages: a type byte (none in the client's startup packets) and a length that counts itself.
 * Bodies whole in a read are passed as views of it; others are gathered up to what `keep` asks for.
 */
class Reader {
  private readonly head = new Uint8Array(5);
  private headLen = 0;
  private type = 0;
  private bodyLength = 0;
  /** Body bytes still to come of the message being read; -1 between messages. */
  private remaining = -1;
  private kept = 0;
  private readonly gather = new Gather();
  private at = 0;

  constructor(public isStartup: boolean) {}

  feed(
    chunk: Uint8Array,
    at: number,
    onMessage: (type: number, body: Uint8Array, length: number, at: number) => void,
    keep: (type: number, length: number) => number,
  ): void {
    const n = chunk.length;
    let p = 0;
    while (p < n) {
      if (this.remaining >= 0) {
        const take = Math.min(this.remaining, n - p);
        if (this.gather.length < this.kept) this.gather.add(chunk, p, p + take, this.kept);
        this.remaining -= take;
        p += take;
        if (this.remaining > 0) return;
        this.remaining = -1;
        onMessage(this.type, this.gather.buf.subarray(0, this.gather.length), this.bodyLength, this.at);
        this.gather.shrink();
        continue;
      }
      const headSize = this.isStartup ? 4 : 5;
      if (this.headLen === 0 && p + headSize <= n) {
        // Fast path: the header, and most often the whole message, is in this read.
        const type = this.isStartup ? 0 : chunk[p]!;
        const length = readInt32(chunk, p + headSize - 4);
        if (length < 4) throw new ProtocolError(`message length ${length} is invalid`);
        const bodyLength = length - 4;
        const bodyAt = p + headSize;
        if (bodyAt + bodyLength <= n) {
          onMessage(type, chunk.subarray(bodyAt, bodyAt + bodyLength), bodyLength, at);
          p = bodyAt + bodyLength;
          continue;
        }
        this.begin(type, bodyLength, at, keep);
        p = bodyAt;
        continue;
      }
      while (this.headLen < headSize && p < n) this.head[this.headLen++] = chunk[p++]!;
      if (this.headLen < headSize) return;
      const type = this.isStartup ? 0 : this.head[0]!;
      const length = readInt32(this.head, headSize - 4);
      this.headLen = 0;
      if (length < 4) throw new ProtocolError(`message length ${length} is invalid`);
      this.begin(type, length - 4, at, keep);
      if (this.remaining === 0) {
        this.remaining = -1;
        onMessage(type, this.gather.buf.subarray(0, 0), 0, at);
      }
    }
  }

  private begin(type: number, bodyLength: number, at: number, keep: (type: number, length: number) => number): void {
    this.type = type;
    this.bodyLength = bodyLength;
    this.remaining = bodyLength;
    this.kept = keep(type, bodyLength);
    this.at = at;
    this.gather.reset();
  }
}

export function readInt32(b: Uint8Array, p: number): number {
  return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]! | 0;
}

function readInt16(b: Uint8Array, p: number): number {
  return (((b[p]! << 8) | b[p + 1]!) << 16) >> 16;
}

/** The index of the NUL that ends the C string at `from` (the body's end when it is cut). */
function cstringEnd(b: Uint8Array, from: number): number {
  const i = b.indexOf(0, from);
  return i === -1 ? b.length : i;
}

function latin1(b: Uint8Array, from: number, to: number): string {
  return to - from <= 0 ? "" : String.fromCharCode.apply(null, b.subarray(from, Math.min(to, from + 256)) as unknown as number[]);
}

function describeType(type: number): string {
  return type >= 0x20 && type < 0x7f ? `'${String.fromCharCode(type)}'` : `0x${type.toString(16)}`;
}

/** Rows in a CommandComplete tag ("SELECT 3", "INSERT 0 1", "UPDATE 5"); -1 when it has none. */
export function rowsOfTag(tag: string): number {
  const space = tag.lastIndexOf(" ");
  if (space === -1) return -1;
  const value = Number(tag.slice(space + 1));
  return Number.isSafeInteger(value) && value >= 0 && /^(SELECT|INSERT|UPDATE|DELETE|MERGE|FETCH|MOVE|COPY)\b/.test(tag) ? value : -1;
}

/** ErrorResponse: SQLSTATE, the message (with its detail), severity. */
function errorFields(body: Uint8Array, limit: number): { code: string; message: string; severity: string } {
  let code = "";
  let message = "";
  let detail = "";
  let severity = "";
  let p = 0;
  while (p < body.length && body[p] !== 0) {
    const field = body[p]!;
    const end = cstringEnd(body, p + 1);
    if (field === 0x43) code = latin1(body, p + 1, end);
    else if (field === 0x4d) message = textOf(body, p + 1, end, Math.max(256, Math.min(limit, 1024))).text;
    else if (field === 0x44) detail = textOf(body, p + 1, end, 512).text;
    else if (field === 0x56 || (field === 0x53 && !severity)) severity = latin1(body, p + 1, end);
    p = end + 1;
  }
  return { code, message: detail ? `${message} (${detail})` : message, severity };
}

const PG_EPOCH_MS = Date.UTC(2000, 0, 1);

/** A bound value as text: text format as it is, binary format by its type (the common ones), else hex. */
function decodeParameter(b: Uint8Array, from: number, to: number, isBinary: boolean, type: number, limit: number): string {
  if (!isBinary) return textOf(b, from, to, limit).text;
  const n = to - from;
  const view = new DataView(b.buffer, b.byteOffset + from, n);
  switch (type) {
    case 16: // bool
      return n === 1 ? (b[from] ? "true" : "false") : hexOf(b, from, to, 64);
    case 21: // int2
      return n === 2 ? String(view.getInt16(0)) : hexOf(b, from, to, 64);
    case 23: // int4
    case 26: // oid
      return n === 4 ? String(type === 26 ? view.getUint32(0) : view.getInt32(0)) : hexOf(b, from, to, 64);
    case 20: // int8
      return n === 8 ? String(view.getBigInt64(0)) : hexOf(b, from, to, 64);
    case 700: // float4
      return n === 4 ? String(view.getFloat32(0)) : hexOf(b, from, to, 64);
    case 701: // float8
      return n === 8 ? String(view.getFloat64(0)) : hexOf(b, from, to, 64);
    case 25: // text
    case 1043: // varchar
    case 1042: // bpchar
    case 19: // name
    case 114: // json
    case 3802: // jsonb (a version byte, then text)
      return textOf(b, type === 3802 && n > 0 ? from + 1 : from, to, limit).text;
    case 2950: {
      // uuid
      if (n !== 16) return hexOf(b, from, to, 64);
      const h = hexOf(b, from, to, 16).slice(2);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    case 1114: // timestamp
    case 1184: {
      // timestamptz: microseconds since 2000-01-01
      if (n !== 8) return hexOf(b, from, to, 64);
      const micros = view.getBigInt64(0);
      const ms = PG_EPOCH_MS + Number(micros / 1000n);
      return Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? new Date(ms).toISOString() : String(micros);
    }
    case 1082: {
      // date: days since 2000-01-01
      if (n !== 4) return hexOf(b, from, to, 64);
      return new Date(PG_EPOCH_MS + view.getInt32(0) * 86_400_000).toISOString().slice(0, 10);
    }
    default:
      return hexOf(b, from, to, Math.min(64, Math.max(1, limit)));
  }
}
