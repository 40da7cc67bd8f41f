/**
 * Database protocols recognised from a connection's first bytes, whatever port they use: PostgreSQL and Redis by the
 * client's first bytes, MySQL/MariaDB by the server's greeting (the server speaks first there).
 */
export type DbSniffed = "postgresql" | "redis" | "more" | null;

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

/** What a client's first bytes say: a PostgreSQL startup packet, a RESP command array, not yet known, or neither. */
export function sniffDbClient(buf: Uint8Array, length: number): DbSniffed {
  if (length === 0) return "more";
  const b0 = buf[0]!;
  if (b0 === 0x00) {
    // A PostgreSQL startup packet: int32 length (8 to 10000), int32 code (protocol 3.x or a request).
    if (length < 8) return length < 2 || buf[1] === 0x00 ? "more" : null;
    const size = ((buf[0]! << 24) | (buf[1]! << 16) | (buf[2]! << 8) | buf[3]!) >>> 0;
    const code = ((buf[4]! << 24) | (buf[5]! << 16) | (buf[6]! << 8) | buf[7]!) >>> 0;
    if (size < 8 || size > 10_000) return null;
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) return size === 8 ? "postgresql" : null;
    if (code === CANCEL_REQUEST) return size === 16 ? "postgresql" : null;
    return code >>> 16 === 3 && (code & 0xffff) < 100 ? "postgresql" : null;
  }
  if (b0 === 0x2a) {
    // *<count>\r\n$<length>\r\n
    let i = 1;
    while (i < length && i <= 8 && buf[i]! >= 0x30 && buf[i]! <= 0x39) i++;
    if (i === length) return i <= 8 ? "more" : null;
    if (i === 1 || i > 8 || buf[i] !== 0x0d) return null;
    if (i + 1 === length) return "more";
    if (buf[i + 1] !== 0x0a) return null;
    if (i + 2 === length) return "more";
    return buf[i + 2] === 0x24 ? "redis" : null;
  }
  return null;
}

/** Whether a server's first bytes are a MySQL/MariaDB greeting (or the error it sends instead of one): true, false, "more". */
export function isMysqlGreeting(buf: Uint8Array, length: number): boolean | "more" {
  if (length < 5) return length === 0 || (length < 4 ? true : buf[3] === 0) ? "more" : false;
  const size = buf[0]! | (buf[1]! << 8) | (buf[2]! << 16);
  if (buf[3] !== 0 || size < 8 || size > 4096) return false;
  if (buf[4] === 0xff) return size < 1024;
  if (buf[4] !== 10) return false;
  // The server's version: printable ASCII up to a NUL.
  for (let i = 5; i < Math.min(length, 4 + size, 5 + 64); i++) {
    const c = buf[i]!;
    if (c === 0) return i > 5;
    if (c < 0x20 || c > 0x7e) return false;
  }
  return length < Math.min(4 + size, 5 + 64) ? "more" : false;
}
