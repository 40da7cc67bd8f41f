/**
 * The bytes an HTTP/2 client sends first (RFC 9113 section 3.4): the 24-byte connection preface, then a SETTINGS
 * frame (9-byte header, three 6-byte parameters). 51 bytes in all. The spec's figures (50 bytes, header 24-32,
 * parameters at 32/38/44) count the 9-byte frame header as 8; the ranges here are the bytes as sent.
 */
export const PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/** The example's settings: max concurrent streams 65535, push disabled, initial window 16 times the default. */
export const SETTINGS: ReadonlyArray<{ id: number; name: string; value: number }> = [
  { id: 0x3, name: "SETTINGS_MAX_CONCURRENT_STREAMS", value: 65535 },
  { id: 0x2, name: "SETTINGS_ENABLE_PUSH", value: 0 },
  { id: 0x4, name: "SETTINGS_INITIAL_WINDOW_SIZE", value: 16 * 65535 },
];

export function prefaceBytes(): Uint8Array {
  const payload = SETTINGS.length * 6;
  const out = new Uint8Array(24 + 9 + payload);
  for (let i = 0; i < 24; i++) out[i] = PREFACE.charCodeAt(i);
  const view = new DataView(out.buffer);
  // Frame header: 24-bit length, type 0x4 (SETTINGS), flags 0, stream 0.
  out[24] = payload >> 16;
  out[25] = (payload >> 8) & 0xff;
  out[26] = payload & 0xff;
  out[27] = 0x4;
  out[28] = 0;
  view.setUint32(29, 0);
  SETTINGS.forEach((setting, i) => {
    view.setUint16(33 + i * 6, setting.id);
    view.setUint32(35 + i * 6, setting.value);
  });
  return out;
}

export type ByteRange = { id: string; label: string; start: number; end: number };

/** The ranges the article's sections explain, in reading order; `end` is exclusive. */
export const RANGES: readonly ByteRange[] = [
  { id: "preface", label: "Connection preface", start: 0, end: 24 },
  { id: "settings", label: "SETTINGS frame", start: 24, end: 51 },
  { id: "header", label: "Frame header", start: 24, end: 33 },
  { id: "payload", label: "Payload", start: 33, end: 51 },
  { id: "max-streams", label: "MAX_CONCURRENT_STREAMS", start: 33, end: 39 },
  { id: "push", label: "ENABLE_PUSH", start: 39, end: 45 },
  { id: "window", label: "INITIAL_WINDOW_SIZE", start: 45, end: 51 },
];

/** A byte as the viewer's text column shows it: printable ASCII 33-126 as itself, anything else as a dot. */
export function printable(byte: number): string {
  return byte >= 33 && byte <= 126 ? String.fromCharCode(byte) : ".";
}
