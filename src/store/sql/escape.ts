/**
 * SQL literals, one function per engine. Every value that reaches generated SQL goes through here
 * (ClickHouse 18.16 has no query parameters). Fuzzed against both real engines in tests/store.
 */

function numberLiteral(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError("number literal must be finite");
  // Parenthesised so a negative value can never merge with a preceding operator ("--1").
  return value < 0 ? `(${String(value)})` : String(value);
}

// Control characters, quote and backslash.
// biome-ignore lint/suspicious/noControlCharactersInRegex: SQL literals escape control characters
const needsEscape = /[\u0000-\u001f\u007f'\\]/g;

const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * ClickHouse: single-quoted with backslash escapes. In text, quote, backslash and control characters
 * are escaped (the SQL itself travels as UTF-8); byte arrays escape every byte outside printable
 * ASCII, so any byte sequence (invalid UTF-8 included) is represented exactly.
 */
export function clickhouseLiteral(value: string | number | Uint8Array): string {
  if (typeof value === "number") return numberLiteral(value);
  if (value instanceof Uint8Array) {
    let out = "'";
    for (const b of value) {
      out += b < 0x20 || b >= 0x7f || b === 0x27 || b === 0x5c ? `\\x${hex[b]}` : String.fromCharCode(b);
    }
    return `${out}'`;
  }
  const escaped = value.toWellFormed().replace(needsEscape, (c) => `\\x${hex[c.charCodeAt(0)]}`);
  return `'${escaped}'`;
}

/**
 * DuckDB: standard SQL strings ('' for a quote, no backslash escapes). NUL cannot appear inside a
 * literal, so it is spliced in with chr(0). Lone UTF-16 surrogates (not text) become U+FFFD.
 * Byte arrays become BLOB literals with every byte escaped.
 */
export function duckdbLiteral(value: string | number | Uint8Array): string {
  if (typeof value === "number") return numberLiteral(value);
  if (value instanceof Uint8Array) {
    let out = "'";
    for (const b of value) out += `\\x${hex[b]}`;
    return `${out}'::BLOB`;
  }
  const text = value.toWellFormed().replaceAll("'", "''");
  if (!text.includes("\0")) return `'${text}'`;
  return `('${text.split("\0").join("' || chr(0) || '")}')`;
}
