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

/** The largest dynamic table followed; peers rarely go past 64 KiB. */
const MAX_TABLE_SIZE = 1024 * 1024;

/** Entries cost their name and value lengths plus 32 (RFC 7541 4.1). */
const entrySize = (name: string, value: string) => name.length + value.length + 32;

export class HpackDecoder {
  /** Newest first. */
  private readonly table: Array<[string, string]> = [];
  private tableSize = 0;
  private maxSize = 4096;

  /** Headers of one complete header block, in order. Throws HpackError on anything malformed. */
  decode(block: Uint8Array): Array<[string, string]> {
    const headers: Array<[string, string]> = [];
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
        headers.push(this.entry(readInt(7)));
      } else if (b & 0x40) {
        // Literal with incremental indexing.
        const index = readInt(6);
        const name = index === 0 ? readString() : this.entry(index)[0];
        const value = readString();
        headers.push([name, value]);
        this.add(name, value);
      } else if (b & 0x20) {
        // Dynamic table size update. Bounded here too: a table we cannot follow fails decoding (passthrough).
        this.maxSize = Math.min(readInt(5), MAX_TABLE_SIZE);
        this.evict(0);
      } else {
        // Literal without indexing (0000) or never indexed (0001).
        const index = readInt(4);
        const name = index === 0 ? readString() : this.entry(index)[0];
        headers.push([name, readString()]);
      }
    }
    return headers;
  }

  private entry(index: number): [string, string] {
    if (index === 0) throw new HpackError("index 0");
    if (index <= staticTable.length) {
      const e = staticTable[index - 1]!;
      return [e[0], e[1]];
    }
    const e = this.table[index - staticTable.length - 1];
    if (!e) throw new HpackError(`index ${index} beyond the table`);
    return [e[0], e[1]];
  }

  private add(name: string, value: string): void {
    const size = entrySize(name, value);
    this.evict(size);
    if (size > this.maxSize) return;
    this.table.unshift([name, value]);
    this.tableSize += size;
  }

  private evict(room: number): void {
    while (this.table.length > 0 && this.tableSize + room > this.maxSize) {
      const [name, value] = this.table.pop()!;
      this.tableSize -= entrySize(name, value);
    }
  }
}
