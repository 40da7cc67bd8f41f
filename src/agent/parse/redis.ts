import { type DbCall, type DbSession, type DbSessionHooks, type DbSessionOptions, newCall, tagCall } from "./db-call.ts";

/**
 * Redis's RESP2 and RESP3, both directions of a client's connection: commands (arrays of bulk strings, or inline
 * lines) with their arguments kept up to the payload limit, replies matched to them in order (pipelines), each reply's
 * type, size and error text. Secrets never kept: AUTH's arguments, HELLO's AUTH pair, MIGRATE's AUTH and AUTH2, CONFIG
 * SET requirepass and masterauth, ACL SETUSER passwords. RESP3 pushes are never matched to a command; pub/sub (RESP2)
 * and MONITOR connections are counted past their subscribing command, without an event per message.
 *
 * Both directions are read a byte state machine at a time; bulk payloads are skipped (only the kept part of a
 * command's arguments is copied), so memory stays bounded whatever a peer sends.
 */
/** Arguments kept per command; the rest are counted. */
const MAX_ARGS = 64;
/** A header line (`*3`, `$5`, `:12`) longer than this is not RESP. */
const MAX_HEADER = 32;
/** Inline commands and simple replies read to this many bytes (an error's text is kept to 1 KiB). */
const MAX_LINE = 64 * 1024;
const MAX_PENDING = 100_000;

const SECRET = "[redacted]";

/** Commands whose arguments hold a password (or, for HELLO, MIGRATE and ACL, some of them). */
const PUBSUB = new Set(["SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"]);

type Pending = { call: DbCall; command: string };

export class RedisSession implements DbSession {
  readonly system = "redis" as const;
  state: "db" | "encrypted" | "failed" = "db";
  failReason = "";
  calls = 0;
  unrecorded = 0;
  database = "0";
  user = "";
  private readonly limit: number;
  private hasCalls = false;
  /** After SUBSCRIBE (RESP2) or MONITOR: replies are messages, counted. */
  private streaming: "" | "pubsub" | "monitor" = "";
  private isResp3 = false;
  /** CLIENT REPLY OFF / SKIP: commands the server will not answer. */
  private replies: "on" | "off" | "skip" = "on";
  private readonly pending: Pending[] = [];
  private pendingHead = 0;

  // The command being read.
  private cState = 0;
  private cNumber = 0;
  private cNegative = false;
  private cDigits = 0;
  private cArgsLeft = 0;
  private cArgCount = 0;
  private cBulkLeft = 0;
  private cArg: Uint8Array | null = null;
  private cArgLen = 0;
  private cArgKeep = 0;
  private cArgs: string[] = [];
  private cStartAt = 0;
  private cBytes = 0;
  private cLine: number[] = [];

  // The reply being read: nested aggregates as a stack of elements left.
  private sState = 0;
  private sType = 0;
  private sNumber = 0;
  private sNegative = false;
  private sDigits = 0;
  private sBulkLeft = 0;
  private readonly stack: number[] = [];
  private sTopType = 0;
  private sTopCount = -1;
  private sIsAttribute = false;
  private sError: number[] = [];
  private sBytes = 0;
  private sStartAt = 0;

  constructor(
    private readonly hooks: DbSessionHooks,
    options: DbSessionOptions,
  ) {
    this.limit = Math.max(0, options.payloadLimit);
  }

  onData(fromClient: boolean, chunk: Uint8Array, at: number): void {
    if (this.state !== "db") return;
    try {
      if (fromClient) this.clientBytes(chunk, at);
      else this.serverBytes(chunk, at);
    } catch (error) {
      this.state = "failed";
      this.failReason = (error instanceof ProtocolError ? error.message : `parser error: ${String(error)}`).slice(0, 200);
      this.pending.length = 0;
    }
  }

  onClose(at: number, error?: string): void {
    if (this.state === "failed") return;
    const reason = error ? `the connection ended (${error}) before the reply` : "the connection closed before the reply";
    for (let i = this.pendingHead; i < this.pending.length; i++) {
      const { call } = this.pending[i]!;
      call.endAt = at;
      tagCall(call, "incomplete", reason);
      this.emit(call);
    }
    this.pending.length = 0;
    this.pendingHead = 0;
  }

  private emit(call: DbCall): void {
    if (!this.hasCalls) {
      this.hasCalls = true;
      call.isFirstOnConnection = true;
    }
    this.calls++;
    this.hooks.onCall(call);
  }

  // ---- commands ----

  private clientBytes(b: Uint8Array, at: number): void {
    const n = b.length;
    let p = 0;
    while (p < n) {
      switch (this.cState) {
        case 0: {
          // A command starts: an array, or an inline line.
          const c = b[p]!;
          this.cStartAt = at;
          this.cBytes = 0;
          this.cArgs = [];
          this.cArgCount = 0;
          if (c === 0x2a) {
            this.cState = 1;
            this.startNumber(true);
            p++;
            this.cBytes++;
          } else if (c === 0x0d || c === 0x0a) {
            p++; // blank lines between inline commands
          } else {
            this.cState = 5;
            this.cLine = [];
          }
          break;
        }
        case 1:
        case 2: {
          // *<count>\r\n or $<length>\r\n: digits, then CR LF.
          const c = b[p++]!;
          this.cBytes++;
          if (c === 0x0d) break;
          if (c === 0x0a) {
            this.numberDone(at);
            break;
          }
          this.digit(c, true);
          break;
        }
        case 3: {
          // $ of the next argument.
          const c = b[p++]!;
          this.cBytes++;
          if (c !== 0x24) throw new ProtocolError(`expected "$" of an argument, got byte ${c}`);
          this.cState = 2;
          this.startNumber(true);
          break;
        }
        case 4: {
          // An argument's bytes and their CR LF.
          const take = Math.min(this.cBulkLeft, n - p);
          if (this.cArgLen < this.cArgKeep) {
            const keep = Math.min(take, this.cArgKeep - this.cArgLen);
            if (this.cArgLen === 0 && keep === this.cArgKeep) {
              // All of what is kept is in this chunk (the usual case): a view of it, no copy.
              this.cArg = b.subarray(p, p + keep);
            } else {
              this.cArg ??= new Uint8Array(this.cArgKeep);
              this.cArg.set(b.subarray(p, p + keep), this.cArgLen);
            }
            this.cArgLen += keep;
          }
          p += take;
          this.cBytes += take;
          this.cBulkLeft -= take;
          if (this.cBulkLeft > 0) break;
          this.argDone();
          break;
        }
        case 5: {
          // Inline command: up to LF.
          const lf = b.indexOf(0x0a, p);
          const end = lf === -1 ? n : lf;
          for (let i = p; i < end && this.cLine.length < MAX_LINE; i++) this.cLine.push(b[i]!);
          if (this.cLine.length >= MAX_LINE) throw new ProtocolError("an inline command longer than 64 KiB");
          this.cBytes += end - p + (lf === -1 ? 0 : 1);
          p = lf === -1 ? n : lf + 1;
          if (lf === -1) break;
          const line = Buffer.from(this.cLine).toString("utf8").replace(/\r$/, "");
          this.cLine = [];
          this.cState = 0;
          const args = line.split(/\s+/).filter(Boolean);
          if (args.length === 0) break;
          this.cArgCount = args.length;
          this.cArgs = args.slice(0, MAX_ARGS).map((a) => (a.length > this.limit ? a.slice(0, this.limit) : a));
          this.commandDone(at);
          break;
        }
      }
    }
  }

  private startNumber(isClient: boolean): void {
    if (isClient) {
      this.cNumber = 0;
      this.cNegative = false;
      this.cDigits = 0;
    } else {
      this.sNumber = 0;
      this.sNegative = false;
      this.sDigits = 0;
    }
  }

  private digit(c: number, isClient: boolean): void {
    if (isClient) {
      if (c === 0x2d && this.cDigits === 0 && !this.cNegative) this.cNegative = true;
      else if (c >= 0x30 && c <= 0x39 && this.cDigits < 12) {
        this.cNumber = this.cNumber * 10 + (c - 0x30);
        this.cDigits++;
      } else throw new ProtocolError(`not a RESP length: byte ${c}`);
      return;
    }
    if (c === 0x2d && this.sDigits === 0 && !this.sNegative) this.sNegative = true;
    else if (c >= 0x30 && c <= 0x39 && this.sDigits < 12) {
      this.sNumber = this.sNumber * 10 + (c - 0x30);
      this.sDigits++;
    } else if (c === 0x3f && this.sDigits === 0) throw new ProtocolError("streamed RESP3 aggregates are not parsed");
    else throw new ProtocolError(`not a RESP length: byte ${c}`);
  }

  private numberDone(at: number): void {
    const value = this.cNegative ? -this.cNumber : this.cNumber;
    if (this.cDigits === 0) throw new ProtocolError("a RESP length without digits");
    if (this.cState === 1) {
      if (value <= 0) {
        this.cState = 0; // *0 or *-1: nothing to run
        return;
      }
      if (value > 1_000_000) throw new ProtocolError(`a command of ${value} arguments`);
      this.cArgsLeft = value;
      this.cArgCount = value;
      this.cState = 3;
      return;
    }
    if (value < 0 || value > 512 * 1024 * 1024) throw new ProtocolError(`an argument of ${value} bytes`);
    this.cBulkLeft = value + 2;
    const index = this.cArgCount - this.cArgsLeft;
    this.cArgKeep = index < MAX_ARGS ? Math.min(value, index === 0 ? 64 : this.limit * 4) : 0;
    this.cArg = null;
    this.cArgLen = 0;
    this.cState = 4;
    void at;
  }

  private argDone(): void {
    const index = this.cArgCount - this.cArgsLeft;
    if (index < MAX_ARGS) {
      const bytes = this.cArg ? this.cArg.subarray(0, this.cArgLen) : new Uint8Array(0);
      let text = argText(bytes);
      if (text.length > this.limit) text = text.slice(0, this.limit);
      this.cArgs.push(text);
    }
    this.cArg = null;
    this.cArgsLeft--;
    this.cState = this.cArgsLeft > 0 ? 3 : 0;
    if (this.cArgsLeft === 0) this.commandDone(this.cStartAt);
  }

  private commandDone(startAt: number): void {
    const args = this.cArgs;
    const command = (args[0] ?? "").toUpperCase();
    if (this.streaming) {
      // Inside pub/sub or MONITOR the connection's traffic is counted, not recorded.
      this.unrecorded++;
      return;
    }
    this.learn(command, args);
    hideSecrets(command, args);
    const call = newCall("redis", this.hooks, startAt, this.database, this.user);
    call.bytesSent = this.cBytes;
    call.sentAt = startAt;
    call.args = args;
    if (this.cArgCount > args.length) tagCall(call, "arguments", `${this.cArgCount} (first ${args.length} kept)`);
    if (this.pending.length - this.pendingHead > MAX_PENDING)
      throw new ProtocolError(`more than ${MAX_PENDING} commands waiting for replies`);
    const isUnanswered = this.replies !== "on" || (this.isResp3 && (PUBSUB.has(command) || command.endsWith("UNSUBSCRIBE")));
    if (this.replies === "skip") this.replies = "on";
    if (command === "CLIENT" && (args[1] ?? "").toUpperCase() === "REPLY") {
      const mode = (args[2] ?? "").toUpperCase();
      if (mode === "OFF") this.replies = "off";
      else if (mode === "SKIP") this.replies = "skip";
      else if (mode === "ON" && this.replies === "off") this.replies = "on";
    }
    if (isUnanswered) {
      call.endAt = startAt;
      tagCall(call, "reply", this.isResp3 && PUBSUB.has(command) ? "confirmed by a push" : "none (CLIENT REPLY)");
      this.emit(call);
      return;
    }
    this.pending.push({ call, command });
  }

  /** What a command tells about the connection: its user, its database. */
  private learn(command: string, args: string[]): void {
    if (command === "AUTH" && args.length >= 3) this.user = args[1]!;
    else if (command === "HELLO") {
      const auth = args.findIndex((a, i) => i > 0 && a.toUpperCase() === "AUTH");
      if (auth > 0 && args[auth + 1]) this.user = args[auth + 1]!;
    }
  }

  // ---- replies ----

  private serverBytes(b: Uint8Array, at: number): void {
    const n = b.length;
    let p = 0;
    while (p < n) {
      switch (this.sState) {
        case 0: {
          const c = b[p++]!;
          if (this.stack.length === 0 && !this.sIsAttribute) {
            this.sStartAt = at;
            this.sBytes = 0;
            this.sTopType = c;
            this.sTopCount = -1;
            this.sError = [];
          }
          this.sBytes++;
          this.sType = c;
          if (this.streaming === "monitor") {
            this.sState = 2;
            break;
          }
          switch (c) {
            case 0x2b: // + simple string
            case 0x2d: // - error
            case 0x3a: // : integer
            case 0x5f: // _ null
            case 0x23: // # boolean
            case 0x2c: // , double
            case 0x28: // ( big number
              this.sState = 2;
              break;
            case 0x24: // $ bulk
            case 0x21: // ! bulk error
            case 0x3d: // = verbatim
            case 0x2a: // * array
            case 0x25: // % map
            case 0x7e: // ~ set
            case 0x3e: // > push
            case 0x7c: // | attributes
              this.sState = 1;
              this.startNumber(false);
              break;
            default:
              throw new ProtocolError(`not a RESP reply: byte ${c}`);
          }
          break;
        }
        case 1: {
          const c = b[p++]!;
          this.sBytes++;
          if (c === 0x0d) break;
          if (c === 0x0a) {
            this.headerDone(at);
            break;
          }
          this.digit(c, false);
          break;
        }
        case 2: {
          // A line value: up to LF; an error's text kept.
          const lf = b.indexOf(0x0a, p);
          const end = lf === -1 ? n : lf;
          if ((this.sType === 0x2d || (this.stack.length === 0 && this.sTopType === 0x2d)) && this.sError.length < 1024) {
            for (let i = p; i < end && this.sError.length < 1024; i++) this.sError.push(b[i]!);
          }
          this.sBytes += end - p + (lf === -1 ? 0 : 1);
          p = lf === -1 ? n : lf + 1;
          if (lf === -1) break;
          this.valueDone(at);
          break;
        }
        case 3: {
          const take = Math.min(this.sBulkLeft, n - p);
          if (this.sType === 0x21 && this.stack.length === 0) {
            for (let i = p; i < p + take && this.sError.length < 1024; i++) this.sError.push(b[i]!);
          }
          p += take;
          this.sBytes += take;
          this.sBulkLeft -= take;
          if (this.sBulkLeft === 0) this.valueDone(at);
          break;
        }
      }
    }
  }

  private headerDone(at: number): void {
    if (this.sDigits === 0) throw new ProtocolError("a RESP length without digits");
    const value = this.sNegative ? -this.sNumber : this.sNumber;
    const type = this.sType;
    if (type === 0x24 || type === 0x21 || type === 0x3d) {
      if (value < 0) {
        this.valueDone(at); // $-1: null
        return;
      }
      if (value > 512 * 1024 * 1024) throw new ProtocolError(`a reply of ${value} bytes`);
      this.sBulkLeft = value + 2;
      this.sState = 3;
      return;
    }
    // Aggregates: their elements follow (maps and attributes count pairs).
    const elements = value < 0 ? 0 : type === 0x25 || type === 0x7c ? value * 2 : value;
    if (this.stack.length === 0 && type !== 0x7c) this.sTopCount = value;
    if (this.stack.length > 64) throw new ProtocolError("replies nested deeper than 64");
    if (type === 0x7c && this.stack.length === 0) {
      // Attributes come before the reply they describe: read them, then the reply.
      this.sIsAttribute = true;
    }
    if (elements === 0) {
      this.valueDone(at);
      return;
    }
    this.stack.push(elements);
    this.sState = 0;
  }

  /** A value ended: its parent aggregate has one element fewer; a top-level value is a reply. */
  private valueDone(at: number): void {
    this.sState = 0;
    while (this.stack.length > 0) {
      const top = this.stack.length - 1;
      this.stack[top]!--;
      if (this.stack[top]! > 0) return;
      this.stack.pop();
    }
    if (this.sIsAttribute && this.sTopType === 0x7c) {
      // The attributes are read; the reply itself comes next.
      this.sIsAttribute = false;
      this.sTopType = 0;
      return;
    }
    this.sIsAttribute = false;
    this.replyDone(at);
  }

  private replyDone(at: number): void {
    if (this.streaming) {
      this.unrecorded++;
      return;
    }
    if (this.sTopType === 0x3e) {
      // A RESP3 push (pub/sub message, invalidation): never a command's reply.
      this.unrecorded++;
      return;
    }
    const entry = this.pending[this.pendingHead];
    if (!entry) throw new ProtocolError("a reply with no command waiting");
    this.pendingHead++;
    if (this.pendingHead === this.pending.length) {
      this.pending.length = 0;
      this.pendingHead = 0;
    } else if (this.pendingHead > 1024) {
      this.pending.splice(0, this.pendingHead);
      this.pendingHead = 0;
    }
    const { call, command } = entry;
    call.firstResultAt = this.sStartAt;
    call.endAt = at;
    call.bytesReceived = this.sBytes;
    const type = this.sTopType;
    const isError = type === 0x2d || type === 0x21;
    if (isError) {
      const text = Buffer.from(this.sError).toString("utf8").replace(/\r$/, "");
      const space = text.indexOf(" ");
      call.errorCode = (space === -1 ? text : text.slice(0, space)).slice(0, 64);
      call.errorMessage = text;
    } else if (this.sTopCount >= 0 && (type === 0x2a || type === 0x25 || type === 0x7e)) call.rows = this.sTopCount;
    tagCall(call, "reply", replyKind(type, this.sTopCount));
    if (!isError) this.afterReply(command, call);
    this.emit(call);
  }

  /** A command that changes how the connection goes on: SELECT, HELLO 3, SUBSCRIBE (RESP2), MONITOR. */
  private afterReply(command: string, call: DbCall): void {
    const args = call.args ?? [];
    if (command === "SELECT" && args[1]) this.database = args[1];
    else if (command === "HELLO" && args[1] === "3") this.isResp3 = true;
    else if (command === "HELLO" && args[1] === "2") this.isResp3 = false;
    else if (PUBSUB.has(command) && !this.isResp3) {
      this.streaming = "pubsub";
      tagCall(call, "pubsub", "the connection carries published messages from here: counted, not recorded");
    } else if (command === "MONITOR") {
      this.streaming = "monitor";
      tagCall(call, "monitor", "the connection carries the server's command stream from here: counted, not recorded");
    }
  }
}

class ProtocolError extends Error {}

function replyKind(type: number, count: number): string {
  switch (type) {
    case 0x2b:
      return "simple string";
    case 0x2d:
    case 0x21:
      return "error";
    case 0x3a:
      return "integer";
    case 0x24:
      return "bulk string";
    case 0x3d:
      return "verbatim string";
    case 0x2a:
      return count < 0 ? "null" : `array of ${count}`;
    case 0x25:
      return `map of ${count}`;
    case 0x7e:
      return `set of ${count}`;
    case 0x5f:
      return "null";
    case 0x23:
      return "boolean";
    case 0x2c:
      return "double";
    case 0x28:
      return "big number";
    default:
      return "reply";
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

function argText(bytes: Uint8Array): string {
  if (bytes.length <= 64) {
    let ascii = true;
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  }
  return utf8.decode(bytes);
}

/** Replaces the arguments that are passwords; whatever --redact says, they never leave the parser. */
export function hideSecrets(command: string, args: string[]): void {
  const hide = (i: number) => {
    if (i < args.length) args[i] = SECRET;
  };
  switch (command) {
    case "AUTH":
      // AUTH password, or AUTH user password: the user name is no secret.
      if (args.length > 1) hide(args.length - 1);
      return;
    case "HELLO":
    case "MIGRATE":
      for (let i = 1; i < args.length; i++) {
        const word = args[i]!.toUpperCase();
        if (word === "AUTH") {
          // HELLO's AUTH takes a user and a password; MIGRATE's a password.
          if (command === "HELLO") hide(i + 2);
          else hide(i + 1);
        } else if (word === "AUTH2" && command === "MIGRATE") hide(i + 2);
      }
      return;
    case "CONFIG": {
      if ((args[1] ?? "").toUpperCase() !== "SET") return;
      for (let i = 2; i + 1 < args.length; i += 2) {
        const name = args[i]!.toLowerCase();
        if (name === "requirepass" || name === "masterauth" || name === "masteruser" || name.includes("pass")) hide(i + 1);
      }
      return;
    }
    case "ACL":
      if ((args[1] ?? "").toUpperCase() !== "SETUSER") return;
      for (let i = 3; i < args.length; i++) if (/^[><#!]/.test(args[i]!)) hide(i);
      return;
  }
}
