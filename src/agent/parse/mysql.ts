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
 * The MySQL client/server protocol (MySQL and MariaDB), both directions of a client's connection: the server's greeting
 * (the server speaks first), the client's handshake response (user and database kept; authentication data, auth
 * switches and caching_sha2 exchanges never read), then commands: COM_QUERY, COM_STMT_PREPARE and COM_STMT_EXECUTE
 * with its binary parameters, COM_INIT_DB, COM_PING and the other simple ones; OK and ERR packets, result sets' rows
 * counted (text and binary, with or without EOF packets, several results per command). A client that asks for TLS on a
 * connection the relay does not decrypt turns it "encrypted".
 */
const CLIENT_CONNECT_WITH_DB = 0x8;
const CLIENT_COMPRESS = 0x20;
const CLIENT_ZSTD = 0x4000000;
const CLIENT_PROTOCOL_41 = 0x200;
const CLIENT_SSL = 0x800;
const CLIENT_SECURE_CONNECTION = 0x8000;
const CLIENT_PLUGIN_AUTH_LENENC = 0x200000;
const CLIENT_DEPRECATE_EOF = 0x1000000;
const CLIENT_QUERY_ATTRIBUTES = 0x8000000;
/** MariaDB's extended capability (upper 32 bits): result sets may leave out column definitions the client has. */
const MARIADB_CACHE_METADATA = 1 << 4;
const SERVER_MORE_RESULTS_EXISTS = 0x8;
const MAX_PACKET = 0xffffff;
const MAX_EXECUTE_BYTES = 256 * 1024;
/** Prepared statements remembered per connection; beyond this the oldest is forgotten. */
const MAX_STATEMENTS = 1024;

const COMMAND_NAMES: Record<number, string> = {
  2: "USE",
  3: "QUERY",
  4: "FIELD LIST",
  9: "STATISTICS",
  12: "KILL",
  14: "PING",
  17: "CHANGE USER",
  22: "PREPARE",
  23: "EXECUTE",
  26: "RESET STATEMENT",
  27: "SET OPTION",
  31: "RESET CONNECTION",
  250: "BULK EXECUTE",
};

type Statement = { id: number; text: string; isCut: boolean; params: number; types: number[] | null };

/** How a command's answer is read: a result set (or OK/ERR), a prepare's answer, one packet, or column definitions. */
type Reply = "result" | "prepare" | "simple" | "any" | "fields";

type Command = {
  reply: Reply;
  call: DbCall | null;
  /** The result-set state: the first packet, column definitions (left), their EOF, rows, a LOCAL INFILE upload. */
  stage: "first" | "columns" | "columns-eof" | "rows" | "infile" | "infile-result" | "prepare-params" | "prepare-columns";
  left: number;
  results: number;
  /** The prepare's statement text, kept for the id its answer gives. */
  prepare: { text: string; isCut: boolean } | null;
};

export class MysqlSession implements DbSession {
  readonly system = "mysql" as const;
  state: "db" | "encrypted" | "failed" = "db";
  failReason = "";
  calls = 0;
  unrecorded = 0;
  database = "";
  user = "";
  private phase: "greeting" | "handshake" | "auth" | "command" = "greeting";
  private serverCaps = 0;
  private serverExt = 0;
  private caps = 0;
  private ext = 0;
  private readonly client = new PacketReader();
  private readonly server = new PacketReader();
  private readonly commands: Command[] = [];
  private readonly statements = new Map<number, Statement>();
  private lastPrepared = -1;
  private hasCalls = false;
  private handshakeAt = 0;
  private readonly limit: number;
  private readonly onClient = (payload: Uint8Array, length: number, seq: number, at: number) => this.clientPacket(payload, length, seq, at);
  private readonly onServer = (payload: Uint8Array, length: number, seq: number, at: number) => this.serverPacket(payload, length, at);
  private readonly keepClient = (length: number) => this.clientKeep(length);
  private readonly keepServer = (length: number) => Math.min(length, 2048);

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
      else this.server.feed(chunk, at, this.onServer, this.keepServer);
    } catch (error) {
      this.state = "failed";
      this.failReason = (error instanceof ProtocolError ? error.message : `parser error: ${String(error)}`).slice(0, 200);
      this.commands.length = 0;
    }
  }

  onClose(at: number, error?: string): void {
    if (this.state === "failed") return;
    const reason = error ? `the connection ended (${error}) before the result` : "the connection closed before the result";
    for (const command of this.commands) {
      if (!command.call) continue;
      command.call.endAt = at;
      tagCall(command.call, "incomplete", reason);
      this.emit(command.call);
    }
    this.commands.length = 0;
  }

  private emit(call: DbCall): void {
    if (!this.hasCalls) {
      this.hasCalls = true;
      call.isFirstOnConnection = true;
    }
    this.calls++;
    this.hooks.onCall(call);
  }

  private clientKeep(length: number): number {
    if (this.phase === "handshake") return Math.min(length, 4096);
    if (this.phase !== "command") return 0;
    const head = this.commands[this.commands.length - 1];
    if (head?.stage === "infile") return 0;
    return Math.min(length, Math.max(this.limit * 4 + 64, MAX_EXECUTE_BYTES));
  }

  private clientPacket(p: Uint8Array, length: number, seq: number, at: number): void {
    const wire = length + 4 * (1 + Math.floor(length / MAX_PACKET));
    if (this.phase === "greeting") throw new ProtocolError("the client spoke before the server's greeting");
    if (this.phase === "handshake") {
      this.handshakeResponse(p, length, at);
      return;
    }
    if (this.phase === "auth") return; // authentication data: never read
    const last = this.commands[this.commands.length - 1];
    if (last?.stage === "infile") {
      // LOCAL INFILE: the file's packets, an empty one ends it.
      if (last.call) {
        last.call.bytesSent += wire;
        const tags = last.call.tags ?? {};
        last.call.tags = tags;
        tags.infile_bytes = String(Number(tags.infile_bytes ?? "0") + length);
      }
      if (length === 0) last.stage = "infile-result";
      return;
    }
    if (seq !== 0) throw new ProtocolError(`a command packet with sequence ${seq}`);
    if (length === 0) throw new ProtocolError("an empty command packet");
    this.command(p, length, wire, at);
  }

  private handshakeResponse(p: Uint8Array, length: number, at: number): void {
    if (length < 4) throw new ProtocolError("handshake response too short");
    const caps = readUint32(p, 0);
    if (!(caps & CLIENT_PROTOCOL_41)) throw new ProtocolError("protocol 320 clients are not parsed");
    this.caps = caps & this.serverCaps;
    this.ext = p.length >= 32 && !(this.serverCaps & 1) ? readUint32(p, 28) & this.serverExt : 0;
    if (caps & CLIENT_SSL && length === 32) {
      // An SSLRequest: TLS follows, which this connection's relay does not read.
      this.state = "encrypted";
      this.failReason = "TLS";
      return;
    }
    if (this.caps & (CLIENT_COMPRESS | CLIENT_ZSTD)) throw new ProtocolError("the compressed protocol is not parsed");
    this.handshakeAt = at;
    let q = 32;
    const userEnd = nul(p, q);
    this.user = textOf(p, q, userEnd, 256).text;
    q = userEnd + 1;
    // Authentication data: skipped, never read.
    if (caps & CLIENT_PLUGIN_AUTH_LENENC) {
      const len = lenenc(p, q);
      q = len.next + len.value;
    } else if (caps & CLIENT_SECURE_CONNECTION) q += 1 + (p[q] ?? 0);
    else q = nul(p, q) + 1;
    if (caps & CLIENT_CONNECT_WITH_DB && q < p.length) this.database = textOf(p, q, nul(p, q), 256).text;
    this.phase = "auth";
  }

  private command(p: Uint8Array, length: number, wire: number, at: number): void {
    const code = p[0]!;
    const name = COMMAND_NAMES[code];
    const command: Command = { reply: "simple", call: null, stage: "first", left: 0, results: 0, prepare: null };
    const call = () => {
      const made = newCall("mysql", this.hooks, at, this.database, this.user);
      made.bytesSent = wire;
      command.call = made;
      return made;
    };
    switch (code) {
      case 0x03: {
        command.reply = "result";
        const c = call();
        let q = 1;
        if (this.caps & CLIENT_QUERY_ATTRIBUTES) q = this.skipQueryAttributes(p, q);
        const read = textOf(p, q, p.length, this.limit);
        c.statement = read.text;
        c.isStatementCut = read.isCut || p.length < length;
        break;
      }
      case 0x16: {
        command.reply = "prepare";
        const read = textOf(p, 1, p.length, this.limit);
        command.prepare = { text: read.text, isCut: read.isCut || p.length < length };
        const c = call();
        c.statement = read.text;
        c.isStatementCut = command.prepare.isCut;
        tagCall(c, "operation", "PREPARE");
        break;
      }
      case 0x17:
      case 0xfa: {
        command.reply = "result";
        const c = call();
        const id = p.length >= 5 ? readUint32(p, 1) : -1;
        const statement = this.statements.get(id === 0xffffffff ? this.lastPrepared : id);
        if (statement) {
          c.statement = statement.text;
          c.isStatementCut = statement.isCut;
          if (code === 0x17) c.parameters = this.executeParameters(p, length, statement);
        } else tagCall(c, "statement", `statement ${id} was prepared before it could be read`);
        tagCall(c, "prepared", String(id));
        if (code === 0xfa) tagCall(c, "bulk", "MariaDB bulk execute");
        break;
      }
      case 0x19: // COM_STMT_CLOSE: no answer
        if (p.length >= 5) this.statements.delete(readUint32(p, 1));
        return;
      case 0x18: // COM_STMT_SEND_LONG_DATA: no answer
      case 0x01: // COM_QUIT
        return;
      case 0x02: {
        const c = call();
        const db = textOf(p, 1, p.length, 256).text;
        c.statement = `USE ${db}`;
        this.database = db;
        break;
      }
      case 0x11: {
        // COM_CHANGE_USER: a new login, authenticated as at the start.
        this.user = textOf(p, 1, nul(p, 1), 256).text;
        command.reply = "simple";
        this.phase = "auth";
        return;
      }
      case 0x09:
        command.reply = "any";
        break;
      case 0x04:
        command.reply = "fields";
        break;
      case 0x0e:
      case 0x1a:
      case 0x1b:
      case 0x1f:
      case 0x0c:
        break;
      default:
        throw new ProtocolError(`command 0x${code.toString(16)} is not parsed`);
    }
    if (!command.call && name) {
      const c = call();
      tagCall(c, "operation", name);
    }
    if (this.commands.length > 10_000) throw new ProtocolError("more than 10000 commands waiting for the server");
    this.commands.push(command);
  }

  private skipQueryAttributes(p: Uint8Array, q: number): number {
    const count = lenenc(p, q);
    const sets = lenenc(p, count.next);
    q = sets.next;
    if (count.value === 0) return q;
    const types = this.binaryParameters(p, q, count.value, null, true);
    return types.next;
  }

  private executeParameters(p: Uint8Array, length: number, statement: Statement): Array<[string, string]> | null {
    let q = 10;
    let count = statement.params;
    if (this.caps & CLIENT_QUERY_ATTRIBUTES && (count > 0 || (p[5]! & 0x08) !== 0)) {
      const n = lenenc(p, q);
      count = n.value;
      q = n.next;
    }
    if (count <= 0) return null;
    const read = this.binaryParameters(p, q, count, statement, false);
    if (p.length < length && read.values.length > 0) {
      const last = read.values[read.values.length - 1]!;
      if (!last[1].endsWith("…") && read.next >= p.length) last[1] = `${last[1]}…`;
    }
    return read.values;
  }

  /** A null bitmap, the new-types flag, types (and names, for query attributes), then the values. */
  private binaryParameters(
    p: Uint8Array,
    q: number,
    count: number,
    statement: Statement | null,
    hasNames: boolean,
  ): { values: Array<[string, string]>; next: number } {
    const values: Array<[string, string]> = [];
    const bitmap = q;
    q += (count + 7) >> 3;
    const isNewTypes = p[q] === 1;
    q++;
    let types = statement?.types ?? null;
    if (isNewTypes) {
      types = [];
      for (let i = 0; i < count && q + 2 <= p.length; i++) {
        types.push(p[q]! | (p[q + 1]! << 8));
        q += 2;
        if (hasNames || this.caps & CLIENT_QUERY_ATTRIBUTES) {
          const len = lenenc(p, q);
          q = len.next + len.value;
        }
      }
      if (statement) statement.types = types;
    }
    for (let i = 0; i < count; i++) {
      const name = `?${i + 1}`;
      if (bitmap + (i >> 3) < p.length && p[bitmap + (i >> 3)]! & (1 << (i & 7))) {
        values.push([name, "NULL"]);
        continue;
      }
      const type = types?.[i];
      if (type === undefined || q >= p.length) {
        values.push([name, "<not captured>"]);
        continue;
      }
      const value = binaryValue(p, q, type, this.limit);
      values.push([name, value.text]);
      q = value.next;
    }
    return { values, next: q };
  }

  private serverPacket(p: Uint8Array, length: number, at: number): void {
    const wire = length + 4 * (1 + Math.floor(length / MAX_PACKET));
    if (this.phase === "greeting") {
      this.greeting(p, length, at);
      return;
    }
    if (this.phase === "handshake") throw new ProtocolError("the server sent a packet before the client's handshake response");
    if (this.phase === "auth") {
      const first = p[0];
      if (first === 0x00) this.phase = "command";
      else if (first === 0xff) {
        this.phase = "command";
        const call = newCall("mysql", this.hooks, this.handshakeAt || at, this.database, this.user);
        call.endAt = at;
        call.firstResultAt = at;
        call.bytesReceived = wire;
        this.error(call, p);
        tagCall(call, "operation", "CONNECT");
        this.emit(call);
      }
      return;
    }
    const command = this.commands[0];
    if (!command) throw new ProtocolError("a packet from the server with no command waiting");
    const call = command.call;
    if (call) {
      call.bytesReceived += wire;
      if (!call.firstResultAt) call.firstResultAt = at;
    }
    const first = p[0] ?? -1;
    const isEnd = first === 0xfe && (length < 9 || ((this.caps & CLIENT_DEPRECATE_EOF) !== 0 && length < MAX_PACKET));
    if (first === 0xff && command.stage !== "columns" && !(command.stage === "rows" && length >= MAX_PACKET)) {
      if (call) this.error(call, p);
      this.done(command, at);
      return;
    }
    switch (command.reply) {
      case "simple":
      case "any":
        if (call && first === 0x00) call.rows = okRows(p);
        this.done(command, at);
        return;
      case "fields":
        if (first === 0xfe && length < 9) this.done(command, at);
        return;
      case "prepare":
        this.prepareReply(command, p, at);
        return;
      case "result":
        this.resultPacket(command, p, first, isEnd, at);
        return;
    }
  }

  private prepareReply(command: Command, p: Uint8Array, at: number): void {
    if (command.stage === "first") {
      if (p[0] !== 0x00 || p.length < 9) throw new ProtocolError("a prepare answered with neither OK nor ERR");
      const id = readUint32(p, 1);
      const columns = p[5]! | (p[6]! << 8);
      const params = p[7]! | (p[8]! << 8);
      const statement: Statement = { id, text: command.prepare?.text ?? "", isCut: command.prepare?.isCut ?? false, params, types: null };
      this.statements.delete(id);
      this.statements.set(id, statement);
      if (this.statements.size > MAX_STATEMENTS) this.statements.delete(this.statements.keys().next().value as number);
      this.lastPrepared = id;
      if (command.call) tagCall(command.call, "prepared", String(id));
      const eof = this.caps & CLIENT_DEPRECATE_EOF ? 0 : 1;
      command.left = params > 0 ? params + eof : 0;
      const after = columns > 0 ? columns + eof : 0;
      command.stage = "prepare-params";
      if (command.left === 0) {
        command.left = after;
        command.stage = "prepare-columns";
      } else command.results = after;
      if (command.left === 0) this.done(command, at);
      return;
    }
    command.left--;
    if (command.left > 0) return;
    if (command.stage === "prepare-params" && command.results > 0) {
      command.stage = "prepare-columns";
      command.left = command.results;
      command.results = 0;
      return;
    }
    this.done(command, at);
  }

  private resultPacket(command: Command, p: Uint8Array, first: number, isEnd: boolean, at: number): void {
    const call = command.call;
    switch (command.stage) {
      case "first": {
        if (first === 0x00) {
          if (call) call.rows = (call.rows < 0 ? 0 : call.rows) + okRows(p);
          command.results++;
          if (okStatus(p) & SERVER_MORE_RESULTS_EXISTS) return;
          this.done(command, at);
          return;
        }
        if (first === 0xfb) {
          command.stage = "infile";
          if (call) tagCall(call, "infile", "LOCAL INFILE");
          return;
        }
        const count = lenenc(p, 0);
        command.left = count.value;
        command.results++;
        // MariaDB may leave the column definitions out (the client has them from an earlier prepare).
        const isMetadataLeftOut = (this.ext & MARIADB_CACHE_METADATA) !== 0 && p[count.next] === 0;
        command.stage = isMetadataLeftOut ? "rows" : "columns";
        if (isMetadataLeftOut && !(this.caps & CLIENT_DEPRECATE_EOF)) command.stage = "columns-eof";
        if (call && call.rows < 0) call.rows = 0;
        return;
      }
      case "columns":
        if (--command.left === 0) command.stage = this.caps & CLIENT_DEPRECATE_EOF ? "rows" : "columns-eof";
        return;
      case "columns-eof":
        command.stage = "rows";
        return;
      case "rows":
        if (isEnd) {
          const status = this.caps & CLIENT_DEPRECATE_EOF ? okStatus(p) : p.length >= 5 ? p[3]! | (p[4]! << 8) : 0;
          if (status & SERVER_MORE_RESULTS_EXISTS) {
            command.stage = "first";
            return;
          }
          this.done(command, at);
          return;
        }
        if (call) call.rows++;
        return;
      case "infile-result":
      case "infile":
        if (call && first === 0x00) call.rows = okRows(p);
        this.done(command, at);
        return;
      default:
        this.done(command, at);
    }
  }

  private done(command: Command, at: number): void {
    this.commands.shift();
    const call = command.call;
    if (!call) return;
    call.endAt = at;
    if (command.results > 1) tagCall(call, "results", String(command.results));
    this.emit(call);
  }

  private error(call: DbCall, p: Uint8Array): void {
    // ERR: 0xff, error code, "#" and SQLSTATE (protocol 41), message.
    if (p.length < 3) return;
    call.errorCode = String(p[1]! | (p[2]! << 8));
    let q = 3;
    if (p[q] === 0x23 && p.length >= q + 6) {
      tagCall(call, "sqlstate", String.fromCharCode(...p.subarray(q + 1, q + 6)));
      q += 6;
    }
    call.errorMessage = textOf(p, q, p.length, Math.max(256, Math.min(1024, this.limit))).text;
  }

  private greeting(p: Uint8Array, length: number, at: number): void {
    if (p[0] === 0xff) {
      // Refused before the greeting ("Too many connections", "Host ... is blocked").
      const call = newCall("mysql", this.hooks, at, "", "");
      call.endAt = at;
      call.firstResultAt = at;
      call.bytesReceived = length + 4;
      this.error(call, Uint8Array.of(0xff, p[1] ?? 0, p[2] ?? 0, ...p.subarray(3)));
      tagCall(call, "operation", "CONNECT");
      this.emit(call);
      this.phase = "command";
      return;
    }
    if (p[0] !== 10) throw new ProtocolError(`protocol version ${p[0]} is not parsed`);
    let q = nul(p, 1) + 1;
    this.serverVersion = textOf(p, 1, q - 1, 64).text;
    q += 4 + 8 + 1; // connection id, auth data, filler
    let caps = p[q]! | (p[q + 1]! << 8);
    q += 2;
    if (q + 5 <= p.length) {
      caps |= (p[q + 3]! | (p[q + 4]! << 8)) << 16;
      // MariaDB puts its extended capabilities in the last 4 reserved bytes when it clears CLIENT_MYSQL (bit 0).
      if (!(caps & 1) && q + 16 <= p.length) this.serverExt = readUint32(p, q + 12);
    }
    this.serverCaps = caps >>> 0;
    this.phase = "handshake";
  }

  /** The server's version, from its greeting ("8.0.36", "11.4.2-MariaDB"). */
  serverVersion = "";
}

class ProtocolError extends Error {}

/** Packets of one direction: 3-byte length, sequence number; a payload of 0xffffff continues in the next packet. */
class PacketReader {
  private readonly head = new Uint8Array(4);
  private headLen = 0;
  private remaining = -1;
  private total = 0;
  private seq = 0;
  private kept = 0;
  private isContinued = false;
  private readonly gather = new Gather();
  private at = 0;

  feed(
    chunk: Uint8Array,
    at: number,
    onPacket: (payload: Uint8Array, length: number, seq: number, at: number) => void,
    keep: (length: number) => number,
  ): void {
    const n = chunk.length;
    let p = 0;
    while (p < n) {
      if (this.remaining >= 0) {
        const take = Math.min(this.remaining, n - p);
        this.gather.add(chunk, p, p + take, this.kept);
        this.remaining -= take;
        p += take;
        if (this.remaining > 0) return;
        this.remaining = -1;
        if (this.isContinued) continue;
        onPacket(this.gather.buf.subarray(0, this.gather.length), this.total, this.seq, this.at);
        this.gather.shrink();
        this.total = 0;
        continue;
      }
      if (this.headLen === 0 && p + 4 <= n && this.total === 0) {
        const length = chunk[p]! | (chunk[p + 1]! << 8) | (chunk[p + 2]! << 16);
        if (length < MAX_PACKET && p + 4 + length <= n) {
          onPacket(chunk.subarray(p + 4, p + 4 + length), length, chunk[p + 3]!, at);
          p += 4 + length;
          continue;
        }
      }
      while (this.headLen < 4 && p < n) this.head[this.headLen++] = chunk[p++]!;
      if (this.headLen < 4) return;
      this.headLen = 0;
      const length = this.head[0]! | (this.head[1]! << 8) | (this.head[2]! << 16);
      if (this.total === 0) {
        this.seq = this.head[3]!;
        this.at = at;
        this.gather.reset();
        this.kept = keep(length);
      }
      this.total += length;
      this.isContinued = length === MAX_PACKET;
      if (this.isContinued) this.kept = Math.max(this.kept, keep(this.total));
      this.remaining = length;
      if (length === 0 && !this.isContinued) {
        this.remaining = -1;
        onPacket(this.gather.buf.subarray(0, this.gather.length), this.total, this.seq, this.at);
        this.total = 0;
      }
    }
  }
}

function readUint32(b: Uint8Array, p: number): number {
  return (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
}

function nul(b: Uint8Array, from: number): number {
  const i = b.indexOf(0, from);
  return i === -1 ? b.length : i;
}

/** A length-encoded integer at `p`: its value (capped to a safe number) and where the next field starts. */
function lenenc(b: Uint8Array, p: number): { value: number; next: number } {
  const first = b[p] ?? 0;
  if (first < 0xfb) return { value: first, next: p + 1 };
  if (first === 0xfc) return { value: (b[p + 1] ?? 0) | ((b[p + 2] ?? 0) << 8), next: p + 3 };
  if (first === 0xfd) return { value: (b[p + 1] ?? 0) | ((b[p + 2] ?? 0) << 8) | ((b[p + 3] ?? 0) << 16), next: p + 4 };
  if (first === 0xfe) {
    const low = p + 9 <= b.length ? readUint32(b, p + 1) : 0;
    const high = p + 9 <= b.length ? readUint32(b, p + 5) : 0;
    return { value: Math.min(Number.MAX_SAFE_INTEGER, high * 2 ** 32 + low), next: p + 9 };
  }
  return { value: 0, next: p + 1 };
}

/** An OK packet's affected rows. */
function okRows(p: Uint8Array): number {
  return p.length > 1 ? lenenc(p, 1).value : 0;
}

/** An OK packet's status flags. */
function okStatus(p: Uint8Array): number {
  const rows = lenenc(p, 1);
  const id = lenenc(p, rows.next);
  return id.next + 2 <= p.length ? p[id.next]! | (p[id.next + 1]! << 8) : 0;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** One binary-protocol value of type `typeWord` (type byte, flags byte with 0x80 unsigned) at `q`. */
function binaryValue(p: Uint8Array, q: number, typeWord: number, limit: number): { text: string; next: number } {
  const type = typeWord & 0xff;
  const isUnsigned = (typeWord & 0x8000) !== 0;
  const view = new DataView(p.buffer, p.byteOffset, p.length);
  const fixed = (size: number, read: () => string) =>
    q + size <= p.length ? { text: read(), next: q + size } : { text: "…", next: p.length };
  switch (type) {
    case 0x06:
      return { text: "NULL", next: q };
    case 0x01:
      return fixed(1, () => String(isUnsigned ? view.getUint8(q) : view.getInt8(q)));
    case 0x02:
    case 0x0d:
      return fixed(2, () => String(isUnsigned ? view.getUint16(q, true) : view.getInt16(q, true)));
    case 0x03:
    case 0x09:
      return fixed(4, () => String(isUnsigned ? view.getUint32(q, true) : view.getInt32(q, true)));
    case 0x08:
      return fixed(8, () => String(isUnsigned ? view.getBigUint64(q, true) : view.getBigInt64(q, true)));
    case 0x04:
      return fixed(4, () => String(view.getFloat32(q, true)));
    case 0x05:
      return fixed(8, () => String(view.getFloat64(q, true)));
    case 0x07:
    case 0x0a:
    case 0x0c: {
      const len = p[q] ?? 0;
      if (q + 1 + len > p.length) return { text: "…", next: p.length };
      const b = q + 1;
      if (len === 0) return { text: "0000-00-00", next: b };
      const date = `${pad(view.getUint16(b, true), 4)}-${pad(p[b + 2]!)}-${pad(p[b + 3]!)}`;
      const time = len >= 7 ? ` ${pad(p[b + 4]!)}:${pad(p[b + 5]!)}:${pad(p[b + 6]!)}` : "";
      const micros = len >= 11 ? `.${pad(view.getUint32(b + 7, true), 6)}` : "";
      return { text: date + time + micros, next: b + len };
    }
    case 0x0b: {
      const len = p[q] ?? 0;
      if (q + 1 + len > p.length) return { text: "…", next: p.length };
      const b = q + 1;
      if (len === 0) return { text: "00:00:00", next: b };
      const hours = view.getUint32(b + 1, true) * 24 + p[b + 5]!;
      const micros = len >= 12 ? `.${pad(view.getUint32(b + 8, true), 6)}` : "";
      return { text: `${p[b] ? "-" : ""}${pad(hours)}:${pad(p[b + 6]!)}:${pad(p[b + 7]!)}${micros}`, next: b + len };
    }
    default: {
      // Strings, decimals, JSON, blobs, enums, bits: a length-encoded string.
      const len = lenenc(p, q);
      const end = len.next + len.value;
      const isText = type !== 0xfc && type !== 0xfb && type !== 0xfa && type !== 0xf9 && type !== 0x10 && type !== 0xff;
      const shown = isText ? textOf(p, len.next, Math.min(end, p.length), limit).text : hexOf(p, len.next, Math.min(end, p.length), 64);
      return { text: end > p.length ? `${shown}…` : shown, next: end };
    }
  }
}
