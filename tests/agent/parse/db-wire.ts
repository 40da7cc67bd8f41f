/** Database protocol messages built by hand, for the parsers' tests: PostgreSQL v3, MySQL's packets, RESP. */

const enc = new TextEncoder();
const cat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const int32 = (v: number) => Uint8Array.of((v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255);
const int16 = (v: number) => Uint8Array.of((v >>> 8) & 255, v & 255);
const cstr = (s: string) => cat(enc.encode(s), Uint8Array.of(0));

export { cat };

export const pg = {
  /** A typed message: type byte, int32 length (itself included), body. */
  msg: (type: string, ...body: Uint8Array[]) => {
    const b = cat(...body);
    return cat(enc.encode(type), int32(b.length + 4), b);
  },
  startup: (params: Record<string, string>) => {
    const body = cat(int32(196608), ...Object.entries(params).flatMap(([k, v]) => [cstr(k), cstr(v)]), Uint8Array.of(0));
    return cat(int32(body.length + 4), body);
  },
  sslRequest: () => cat(int32(8), int32(80877103)),
  query: (text: string) => pg.msg("Q", cstr(text)),
  parse: (name: string, text: string, types: number[] = []) =>
    pg.msg("P", cstr(name), cstr(text), int16(types.length), ...types.map(int32)),
  /** Values: strings (text format) or Uint8Array (binary) or null. */
  bind: (portal: string, statement: string, values: Array<string | Uint8Array | null>) => {
    const formats = values.map((v) => (v instanceof Uint8Array ? 1 : 0));
    return pg.msg(
      "B",
      cstr(portal),
      cstr(statement),
      int16(formats.length),
      ...formats.map(int16),
      int16(values.length),
      ...values.map((v) =>
        v === null ? int32(-1) : cat(int32((typeof v === "string" ? enc.encode(v) : v).length), typeof v === "string" ? enc.encode(v) : v),
      ),
      int16(0),
    );
  },
  describe: (kind: "S" | "P", name: string) => pg.msg("D", enc.encode(kind), cstr(name)),
  execute: (portal = "", maxRows = 0) => pg.msg("E", cstr(portal), int32(maxRows)),
  sync: () => pg.msg("S"),
  password: (secret: string) => pg.msg("p", cstr(secret)),
  // Server
  authOk: () => pg.msg("R", int32(0)),
  authSasl: () => pg.msg("R", int32(10), cstr("SCRAM-SHA-256"), Uint8Array.of(0)),
  ready: (status = "I") => pg.msg("Z", enc.encode(status)),
  parseComplete: () => pg.msg("1"),
  bindComplete: () => pg.msg("2"),
  noData: () => pg.msg("n"),
  rowDescription: (...names: string[]) =>
    pg.msg("T", int16(names.length), ...names.map((n) => cat(cstr(n), int32(0), int16(0), int32(25), int16(-1), int32(-1), int16(0)))),
  paramDescription: (...types: number[]) => pg.msg("t", int16(types.length), ...types.map(int32)),
  dataRow: (...values: string[]) =>
    pg.msg("D", int16(values.length), ...values.map((v) => cat(int32(enc.encode(v).length), enc.encode(v)))),
  complete: (tag: string) => pg.msg("C", cstr(tag)),
  error: (code: string, message: string) =>
    pg.msg(
      "E",
      enc.encode("S"),
      cstr("ERROR"),
      enc.encode("V"),
      cstr("ERROR"),
      enc.encode("C"),
      cstr(code),
      enc.encode("M"),
      cstr(message),
      Uint8Array.of(0),
    ),
  copyIn: () => pg.msg("G", Uint8Array.of(0), int16(0)),
  copyData: (data: string) => pg.msg("d", enc.encode(data)),
  copyDone: () => pg.msg("c"),
  parameterStatus: (k: string, v: string) => pg.msg("S", cstr(k), cstr(v)),
  int32,
  int16,
};

const le16 = (v: number) => Uint8Array.of(v & 255, (v >> 8) & 255);
const le32 = (v: number) => Uint8Array.of(v & 255, (v >> 8) & 255, (v >> 16) & 255, (v >>> 24) & 255);
const lenencStr = (s: string | Uint8Array) => {
  const b = typeof s === "string" ? enc.encode(s) : s;
  return cat(b.length < 251 ? Uint8Array.of(b.length) : Uint8Array.of(0xfc, b.length & 255, b.length >> 8), b);
};

/** Capabilities a modern client and server agree on (protocol 41, secure connection, plugin auth, connect with db). */
const CAPS = 0x200 | 0x8000 | 0x80000 | 0x8 | 0x200000;
const DEPRECATE_EOF = 0x1000000;

export const my = {
  packet: (seq: number, payload: Uint8Array) =>
    cat(Uint8Array.of(payload.length & 255, (payload.length >> 8) & 255, payload.length >> 16, seq), payload),
  greeting: (deprecateEof = true) => {
    const caps = CAPS | (deprecateEof ? DEPRECATE_EOF : 0) | 0x800;
    return my.packet(
      0,
      cat(
        Uint8Array.of(10),
        cstr("10.11.6-MariaDB"),
        le32(42),
        enc.encode("abcdefgh"),
        Uint8Array.of(0),
        le16(caps & 0xffff),
        Uint8Array.of(45),
        le16(2),
        le16(caps >>> 16),
        Uint8Array.of(21),
        new Uint8Array(10),
        enc.encode("ijklmnopqrst"),
        Uint8Array.of(0),
        cstr("mysql_native_password"),
      ),
    );
  },
  handshake: (user: string, db: string, authData: string, deprecateEof = true, ssl = false) => {
    const caps = CAPS | (deprecateEof ? DEPRECATE_EOF : 0) | (ssl ? 0x800 : 0);
    const head = cat(le32(caps), le32(1 << 24), Uint8Array.of(45), new Uint8Array(23));
    if (ssl) return my.packet(1, head);
    return my.packet(ssl ? 2 : 1, cat(head, cstr(user), lenencStr(authData), cstr(db), cstr("mysql_native_password")));
  },
  ok: (seq: number, affected = 0, status = 2) => my.packet(seq, cat(Uint8Array.of(0, affected, 0), le16(status), le16(0))),
  /** The OK that ends a result set under CLIENT_DEPRECATE_EOF. */
  okEnd: (seq: number, status = 2) => my.packet(seq, cat(Uint8Array.of(0xfe, 0, 0), le16(status), le16(0))),
  eof: (seq: number, status = 2) => my.packet(seq, cat(Uint8Array.of(0xfe), le16(0), le16(status))),
  err: (seq: number, code: number, state: string, message: string) =>
    my.packet(seq, cat(Uint8Array.of(0xff), le16(code), enc.encode(`#${state}`), enc.encode(message))),
  query: (text: string) => my.packet(0, cat(Uint8Array.of(0x03), enc.encode(text))),
  prepare: (text: string) => my.packet(0, cat(Uint8Array.of(0x16), enc.encode(text))),
  prepareOk: (seq: number, id: number, columns: number, params: number) =>
    my.packet(seq, cat(Uint8Array.of(0), le32(id), le16(columns), le16(params), Uint8Array.of(0), le16(0))),
  column: (seq: number, name: string) =>
    my.packet(
      seq,
      cat(
        lenencStr("def"),
        lenencStr("shop"),
        lenencStr("t"),
        lenencStr("t"),
        lenencStr(name),
        lenencStr(name),
        Uint8Array.of(0x0c),
        le16(45),
        le32(255),
        Uint8Array.of(0xfd),
        le16(0),
        Uint8Array.of(0),
        le16(0),
      ),
    ),
  row: (seq: number, ...values: string[]) => my.packet(seq, cat(...values.map(lenencStr))),
  /** COM_STMT_EXECUTE with typed values: [type, bytes]. */
  execute: (id: number, values: Array<[number, Uint8Array] | null>) => {
    const bitmap = new Uint8Array((values.length + 7) >> 3);
    values.forEach((v, i) => {
      if (v === null) bitmap[i >> 3]! |= 1 << (i & 7);
    });
    return my.packet(
      0,
      cat(
        Uint8Array.of(0x17),
        le32(id),
        Uint8Array.of(0),
        le32(1),
        ...(values.length > 0
          ? [bitmap, Uint8Array.of(1), ...values.map((v) => le16(v ? v[0] : 6)), ...values.filter((v) => v !== null).map((v) => v![1])]
          : []),
      ),
    );
  },
  long: (v: number) => [0x03, le32(v)] as [number, Uint8Array],
  string: (s: string) => [0xfd, lenencStr(s)] as [number, Uint8Array],
  close: (id: number) => my.packet(0, cat(Uint8Array.of(0x19), le32(id))),
};

export const resp = {
  command: (...args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`,
  ok: "+OK\r\n",
  int: (n: number) => `:${n}\r\n`,
  bulk: (s: string | null) => (s === null ? "$-1\r\n" : `$${Buffer.byteLength(s)}\r\n${s}\r\n`),
  error: (text: string) => `-${text}\r\n`,
  array: (...items: string[]) => `*${items.length}\r\n${items.join("")}`,
  push: (...items: string[]) => `>${items.length}\r\n${items.join("")}`,
  map: (...pairs: string[]) => `%${pairs.length / 2}\r\n${pairs.join("")}`,
};
