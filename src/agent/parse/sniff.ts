/**
 * Protocol sniffing from the first bytes a client sends. HTTP/1 is recognised by its request line
 * (any method token, so PATCH, OPTIONS and custom methods count), HTTP/2 by its connection preface,
 * TLS by a handshake record header.
 */
export type Sniffed = "http1" | "http2" | "tls" | "unknown" | "more";

const H2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/** A request line longer than this is not worth waiting for. */
export const MAX_SNIFF_BYTES = 8192;

const tchar = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
  tchar[c.charCodeAt(0)] = 1;
}

/** The first `length` bytes of `buf` are the start of the HTTP/2 client preface (or nothing yet). */
export function isHttp2PrefaceStart(buf: Uint8Array | null, length: number): boolean {
  if (!buf) return length === 0;
  for (let i = 0; i < Math.min(length, H2_PREFACE.length); i++) if (buf[i] !== H2_PREFACE.charCodeAt(i)) return false;
  return true;
}

/**
 * Whether a server's first bytes may be an HTTP/2 server preface (a SETTINGS frame, not an ACK, on stream 0): an h2c
 * server may send it as soon as it accepts, before the client's preface arrives. Looks at the bytes there are.
 */
export function mayBeHttp2ServerPreface(buf: Uint8Array, length: number): boolean {
  const expected = [-1, -1, -1, 4, 0, 0, 0, 0, 0];
  for (let i = 0; i < Math.min(length, 9); i++) if (expected[i] !== -1 && buf[i] !== expected[i]) return false;
  if (length < 3) return true;
  const frameLength = (buf[0]! << 16) | (buf[1]! << 8) | buf[2]!;
  return frameLength % 6 === 0 && frameLength <= 16384;
}

export function sniff(buf: Uint8Array, length: number): Sniffed {
  if (length === 0) return "more";
  const b0 = buf[0]!;
  if (b0 === 0x16) {
    if (length >= 2 && buf[1] !== 0x03) return "unknown";
    if (length >= 3 && buf[2]! > 0x04) return "unknown";
    // The record header (5 bytes) tells how long the ClientHello is.
    return length < 5 ? "more" : "tls";
  }
  // Preface first: "PRI" is a valid method token.
  if (b0 === 0x50) {
    const n = Math.min(length, H2_PREFACE.length);
    let isPrefix = true;
    for (let i = 0; i < n; i++) {
      if (buf[i] !== H2_PREFACE.charCodeAt(i)) {
        isPrefix = false;
        break;
      }
    }
    if (isPrefix) return n === H2_PREFACE.length ? "http2" : "more";
  }
  // Method token, one space, a target, one space, "HTTP/1.x", end of line.
  let i = 0;
  while (i < length && i <= 32) {
    const c = buf[i]!;
    if (c === 32) break;
    if (c >= 128 || tchar[c] !== 1) return "unknown";
    i++;
  }
  if (i === length) return length > 32 ? "unknown" : "more";
  if (i === 0 || buf[i] !== 32) return "unknown";
  let lf = buf.indexOf(10, i);
  if (lf === -1 || lf >= length) return length >= MAX_SNIFF_BYTES ? "unknown" : "more";
  if (buf[lf - 1] === 13) lf--;
  // "... HTTP/1.x" at the end of the first line.
  if (lf - 9 <= i) return "unknown";
  const v = lf - 8;
  const isHttp1 =
    buf[v - 1] === 32 &&
    buf[v] === 0x48 &&
    buf[v + 1] === 0x54 &&
    buf[v + 2] === 0x54 &&
    buf[v + 3] === 0x50 &&
    buf[v + 4] === 0x2f &&
    buf[v + 5] === 0x31 &&
    buf[v + 6] === 0x2e;
  return isHttp1 ? "http1" : "unknown";
}

/**
 * The server name (SNI) of a TLS ClientHello, when the whole first record is in `buf`;
 * "" when absent or not parseable. Reads only within bounds.
 */
export function tlsServerName(buf: Uint8Array, length: number): string {
  if (length < 5 || buf[0] !== 0x16) return "";
  const recordEnd = Math.min(length, 5 + ((buf[3]! << 8) | buf[4]!));
  let p = 5;
  if (buf[p] !== 0x01) return ""; // ClientHello
  p += 4; // type + 24-bit length
  p += 2 + 32; // version + random
  if (p >= recordEnd) return "";
  p += 1 + buf[p]!; // session id
  if (p + 2 > recordEnd) return "";
  p += 2 + ((buf[p]! << 8) | buf[p + 1]!); // cipher suites
  if (p >= recordEnd) return "";
  p += 1 + buf[p]!; // compression methods
  if (p + 2 > recordEnd) return "";
  const extEnd = Math.min(recordEnd, p + 2 + ((buf[p]! << 8) | buf[p + 1]!));
  p += 2;
  while (p + 4 <= extEnd) {
    const type = (buf[p]! << 8) | buf[p + 1]!;
    const len = (buf[p + 2]! << 8) | buf[p + 3]!;
    p += 4;
    if (type === 0 && p + 5 <= extEnd) {
      // server_name list: list length (2), name type (1), name length (2), name
      const nameLen = (buf[p + 3]! << 8) | buf[p + 4]!;
      const start = p + 5;
      if (buf[p + 2] !== 0 || start + nameLen > extEnd || nameLen > 255) return "";
      let name = "";
      for (let i = start; i < start + nameLen; i++) {
        const c = buf[i]!;
        if (c < 0x21 || c > 0x7e) return "";
        name += String.fromCharCode(c);
      }
      return name;
    }
    p += len;
  }
  return "";
}

export type ClientHello = {
  /** SNI host name; "" when the client sent none. */
  serverName: string;
  /** The ALPN protocols offered, in the client's order. */
  alpn: string[];
  /** The ALPN extension's protocol list as on the wire (length-prefixed names), for offering the same list on. */
  alpnWire: Uint8Array | null;
  /** The key-exchange groups offered (supported_groups), code points in the client's order. */
  groups: number[];
  /** Bytes of `buf` the ClientHello's records take. */
  length: number;
};

/** A ClientHello split over more records than this much is not worth waiting for. */
const MAX_HELLO_BYTES = 64 * 1024;

/**
 * The ClientHello at the start of `buf` (it may span several records): "more" while it is incomplete, null when
 * the bytes are not a ClientHello. Reads only within bounds.
 */
export function parseClientHello(buf: Uint8Array, length: number): ClientHello | "more" | null {
  // Gather the handshake message from as many records as it takes.
  let message: Uint8Array | null = null;
  let have = 0;
  let need = -1;
  let p = 0;
  while (need < 0 || have < need) {
    if (p + 5 > length) return length >= MAX_HELLO_BYTES ? null : "more";
    if (buf[p] !== 0x16 || buf[p + 1] !== 0x03) return null;
    const recordLen = (buf[p + 3]! << 8) | buf[p + 4]!;
    if (recordLen === 0) return null;
    if (p + 5 + recordLen > length) return length >= MAX_HELLO_BYTES ? null : "more";
    const payload = buf.subarray(p + 5, p + 5 + recordLen);
    p += 5 + recordLen;
    if (need < 0) {
      if (payload.length < 4 || payload[0] !== 0x01) return null;
      need = 4 + ((payload[1]! << 16) | (payload[2]! << 8) | payload[3]!);
      if (need > MAX_HELLO_BYTES) return null;
      if (payload.length >= need) {
        message = payload;
        have = payload.length;
        break;
      }
      message = new Uint8Array(need);
    }
    const take = Math.min(payload.length, need - have);
    message!.set(payload.subarray(0, take), have);
    have += take;
  }
  const hello = readHelloBody(message!, need);
  return hello ? { ...hello, length: p } : null;
}

function readHelloBody(m: Uint8Array, end: number): Omit<ClientHello, "length"> | null {
  let p = 4 + 2 + 32; // header, version, random
  if (p >= end) return null;
  p += 1 + m[p]!; // session id
  if (p + 2 > end) return null;
  p += 2 + ((m[p]! << 8) | m[p + 1]!); // cipher suites
  if (p >= end) return null;
  p += 1 + m[p]!; // compression methods
  const result: Omit<ClientHello, "length"> = { serverName: "", alpn: [], alpnWire: null, groups: [] };
  if (p + 2 > end) return p === end ? result : null;
  const extEnd = p + 2 + ((m[p]! << 8) | m[p + 1]!);
  if (extEnd > end) return null;
  p += 2;
  while (p + 4 <= extEnd) {
    const type = (m[p]! << 8) | m[p + 1]!;
    const len = (m[p + 2]! << 8) | m[p + 3]!;
    p += 4;
    if (p + len > extEnd) return null;
    if (type === 0) result.serverName = readServerName(m, p, p + len);
    else if (type === 10 && len >= 2) {
      const listEnd = Math.min(p + len, p + 2 + ((m[p]! << 8) | m[p + 1]!));
      for (let q = p + 2; q + 1 < listEnd && result.groups.length < 64; q += 2) result.groups.push((m[q]! << 8) | m[q + 1]!);
    } else if (type === 16 && len >= 2) {
      const listEnd = Math.min(p + len, p + 2 + ((m[p]! << 8) | m[p + 1]!));
      result.alpnWire = m.slice(p + 2, listEnd);
      let q = p + 2;
      while (q < listEnd) {
        const n = m[q]!;
        if (n === 0 || q + 1 + n > listEnd) return null;
        result.alpn.push(String.fromCharCode(...m.subarray(q + 1, q + 1 + n)));
        q += 1 + n;
      }
    }
    p += len;
  }
  return result;
}

function readServerName(m: Uint8Array, p: number, end: number): string {
  // server_name list: list length (2), name type (1), name length (2), name
  if (p + 5 > end || m[p + 2] !== 0) return "";
  const nameLen = (m[p + 3]! << 8) | m[p + 4]!;
  const start = p + 5;
  if (start + nameLen > end || nameLen > 255) return "";
  let name = "";
  for (let i = start; i < start + nameLen; i++) {
    const c = m[i]!;
    if (c < 0x21 || c > 0x7e) return "";
    name += String.fromCharCode(c);
  }
  return name;
}
