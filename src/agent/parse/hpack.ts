/**
 * HPACK (RFC 7541) decoding for HTTP/2 header blocks: static and dynamic tables, size updates,
 * integers, literals and Huffman-coded strings. One decoder per direction of a connection; every
 * header block must go through it, in order, to keep the dynamic table in step with the peer's.
 */

/** RFC 7541 Appendix A. */
const staticTable: ReadonlyArray<readonly [string, string]> = [
  [":authority", ""],
  [":method", "GET"],
  [":method", "POST"],
  [":path", "/"],
  [":path", "/index.html"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "200"],
  [":status", "204"],
  [":status", "206"],
  [":status", "304"],
  [":status", "400"],
  [":status", "404"],
  [":status", "500"],
  ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"],
  ["accept-language", ""],
  ["accept-ranges", ""],
  ["accept", ""],
  ["access-control-allow-origin", ""],
  ["age", ""],
  ["allow", ""],
  ["authorization", ""],
  ["cache-control", ""],
  ["content-disposition", ""],
  ["content-encoding", ""],
  ["content-language", ""],
  ["content-length", ""],
  ["content-location", ""],
  ["content-range", ""],
  ["content-type", ""],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["expect", ""],
  ["expires", ""],
  ["from", ""],
  ["host", ""],
  ["if-match", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["if-range", ""],
  ["if-unmodified-since", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["max-forwards", ""],
  ["proxy-authenticate", ""],
  ["proxy-authorization", ""],
  ["range", ""],
  ["referer", ""],
  ["refresh", ""],
  ["retry-after", ""],
  ["server", ""],
  ["set-cookie", ""],
  ["strict-transport-security", ""],
  ["transfer-encoding", ""],
  ["user-agent", ""],
  ["vary", ""],
  ["via", ""],
  ["www-authenticate", ""],
];

/**
 * Code lengths of the Huffman code of RFC 7541 Appendix B, by symbol (256 = EOS). The code is canonical
 * (codes of one length are consecutive in symbol order), so the lengths define it.
 */
export const codeLengths = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10,
  12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7,
  7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22,
  23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22,
  23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20,
  24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/**
 * Canonical decoding tables: for each length, the first code, how many codes, and where its symbols
 * start in `symbols` (sorted by length, then symbol).
 */
const MAX_LEN = 30;
const firstCode = new Array<number>(MAX_LEN + 2).fill(0);
const countByLen = new Array<number>(MAX_LEN + 2).fill(0);
const offsetByLen = new Array<number>(MAX_LEN + 2).fill(0);
const symbols: number[] = [];
{
  for (const len of codeLengths) countByLen[len]!++;
  const order = codeLengths.map((len, sym) => [len, sym] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (const [, sym] of order) symbols.push(sym);
  let code = 0;
  let offset = 0;
  for (let len = 1; len <= MAX_LEN; len++) {
    firstCode[len] = code;
    offsetByLen[len] = offset;
    code = (code + countByLen[len]!) * 2;
    offset += countByLen[len]!;
  }
}

export class HpackError extends Error {
  override name = "HpackError";
}

function huffmanDecode(buf: Uint8Array, start: number, end: number): string {
  let out = "";
  let code = 0;
  let len = 0;
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      code = code * 2 + ((byte >> bit) & 1);
      len++;
      const index = code - firstCode[len]!;
      if (index >= 0 && index < countByLen[len]!) {
        const sym = symbols[offsetByLen[len]! + index]!;
        if (sym === 256) throw new HpackError("EOS in a Huffman string");
        out += String.fromCharCode(sym);
        code = 0;
        len = 0;
      } else if (len >= MAX_LEN) {
        throw new HpackError("bad Huffman code");
      }
    }
  }
  // Padding: fewer than 8 bits, all ones (a prefix of EOS).
  if (len > 7 || code !== 2 ** len - 1) throw new HpackError("bad Huffman padding");
  return out;
}

/**
 * The largest dynamic table followed (each connection keeps one per direction); peers rarely go past 4 KiB, and an
 * entry larger than a header list may hold could never be used.
 */
const MAX_TABLE_SIZE = 64 * 1024;

/** Entries cost their name and value lengths plus 32 (RFC 7541 4.1). */
const entrySize = (name: string, value: string) => name.length + value.length + 32;

/**
 * The most one header block may decode to, counted as RFC 9113's SETTINGS_MAX_HEADER_LIST_SIZE counts it (name
 * and value lengths plus 32 per field): the HTTP/1 parser's bound on a head. A one-byte reference to a table
 * entry expands to the whole entry, so without it a block of a few kilobytes decodes to gigabytes.
 */
export const MAX_HEADER_LIST_SIZE = 64 * 1024;
/** Fields one header block may decode to. */
export const MAX_HEADER_FIELDS = 1024;

export class HpackDecoder {
  /** Oldest first from `oldest`: adding and evicting cost the same however many entries the table holds. */
  private table: Array<readonly [string, string]> = [];
  private oldest = 0;
  private tableSize = 0;
  private maxSize = 4096;
  /** The size of the last decoded header list (RFC 9113 6.5.2). */
  listSize = 0;

  /**
   * Headers of one complete header block, in order. Throws HpackError on anything malformed, and once the list
   * passes MAX_HEADER_LIST_SIZE or MAX_HEADER_FIELDS (the rest of the block is not decoded: the work stays
   * proportional to the bytes of the block, the table no longer follows the peer's).
   */
  decode(block: Uint8Array): Array<[string, string]> {
    const headers: Array<[string, string]> = [];
    let listSize = 0;
    const emit = (name: string, value: string) => {
      listSize += entrySize(name, value);
      if (listSize > MAX_HEADER_LIST_SIZE) throw new HpackError(`header list over ${MAX_HEADER_LIST_SIZE / 1024} KiB decoded`);
      if (headers.length >= MAX_HEADER_FIELDS) throw new HpackError(`header list over ${MAX_HEADER_FIELDS} fields`);
      headers.push([name, value]);
    };
    let p = 0;
    const readInt = (prefixBits: number): number => {
      const mask = (1 << prefixBits) - 1;
      let value = block[p++]! & mask;
      if (value < mask) return value;
      let shift = 0;
      for (;;) {
        if (p >= block.length) throw new HpackError("truncated integer");
        const b = block[p++]!;
        value += (b & 0x7f) * 2 ** shift;
        shift += 7;
        if ((b & 0x80) === 0) break;
        if (shift > 28) throw new HpackError("integer too large");
      }
      return value;
    };
    const readString = (): string => {
      if (p >= block.length) throw new HpackError("truncated string");
      const isHuffman = (block[p]! & 0x80) !== 0;
      const length = readInt(7);
      if (p + length > block.length) throw new HpackError("truncated string");
      const start = p;
      p += length;
      if (isHuffman) return huffmanDecode(block, start, p);
      if (length <= 64) {
        let text = "";
        for (let i = start; i < p; i++) text += String.fromCharCode(block[i]!);
        return text;
      }
      return Buffer.from(block.buffer, block.byteOffset + start, length).toString("latin1");
    };
    while (p < block.length) {
      const b = block[p]!;
      if (b & 0x80) {
        // Indexed header field.
        const [name, value] = this.entry(readInt(7));
        emit(name, value);
      } else if (b & 0x40) {
        // Literal with incremental indexing.
        const index = readInt(6);
        const name = index === 0 ? readString() : this.entry(index)[0];
        const value = readString();
        emit(name, value);
        this.add(name, value);
      } else if (b & 0x20) {
        // Dynamic table size update. Bounded here too: a table we cannot follow fails decoding (passthrough).
        this.maxSize = Math.min(readInt(5), MAX_TABLE_SIZE);
        this.evict(0);
      } else {
        // Literal without indexing (0000) or never indexed (0001).
        const index = readInt(4);
        const name = index === 0 ? readString() : this.entry(index)[0];
        emit(name, readString());
      }
    }
    this.listSize = listSize;
    return headers;
  }

  private entry(index: number): readonly [string, string] {
    if (index === 0) throw new HpackError("index 0");
    if (index <= staticTable.length) return staticTable[index - 1]!;
    const at = this.table.length - (index - staticTable.length);
    if (at < this.oldest) throw new HpackError(`index ${index} beyond the table`);
    return this.table[at]!;
  }

  private add(name: string, value: string): void {
    const size = entrySize(name, value);
    this.evict(size);
    if (size > this.maxSize) return;
    this.table.push([name, value]);
    this.tableSize += size;
  }

  private evict(room: number): void {
    while (this.oldest < this.table.length && this.tableSize + room > this.maxSize) {
      const [name, value] = this.table[this.oldest]!;
      this.tableSize -= entrySize(name, value);
      this.oldest++;
    }
    if (this.oldest === this.table.length) {
      this.table = [];
      this.oldest = 0;
    } else if (this.oldest > 1024 && this.oldest * 2 > this.table.length) {
      this.table = this.table.slice(this.oldest);
      this.oldest = 0;
    }
  }
}
