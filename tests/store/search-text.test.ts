import { describe, expect, test } from "bun:test";
import { brotliCompressSync, deflateRawSync, gzipSync, zstdCompressSync } from "node:zlib";
import { binaryMarker } from "~/lib/filter/content.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { bodyForm, decodeForSearch, maxDecodedBodyBytes, SearchTexts } from "~/store/search-text.ts";
import { tracedEvent } from "../support/event-factory.ts";

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");
const json = JSON.stringify({ order: "zebra-7781", items: Array.from({ length: 50 }, (_, i) => ({ sku: `sku-${i}`, qty: i })) });

function filled(overrides: Partial<TracedEvent>): TracedEvent {
  const e = tracedEvent(overrides);
  new SearchTexts().fill(e);
  return e;
}

describe("bodies searched as a person reads them", () => {
  test("each content encoding the agent left in place is undone: gzip, deflate, br, zstd", () => {
    for (const [coding, bytes] of [
      ["gzip", gzipSync(json)],
      ["deflate", deflateRawSync(json)],
      ["br", brotliCompressSync(json)],
      ["zstd", zstdCompressSync(json)],
      ["gzip, br", brotliCompressSync(gzipSync(json))],
    ] as const) {
      const e = filled({ http_resp_body: b64(bytes), http_resp_content_encoding: coding, http_resp_content_type: "application/json" });
      expect([coding, e.search_resp_body]).toEqual([coding, json]);
      expect(e.tags.resp_body_search).toBeUndefined();
    }
  });

  test("a gzip body cut at capture is searched as far as it was kept", () => {
    const long = JSON.stringify(Array.from({ length: 4000 }, (_, i) => `order-${i}`));
    const gz = gzipSync(long);
    const cut = gz.subarray(0, Math.floor(gz.length / 2));
    const e = filled({
      http_resp_body: b64(cut),
      http_resp_body_truncated: true,
      http_resp_content_encoding: "gzip",
      http_resp_content_type: "application/json",
    });
    expect(e.search_resp_body.length).toBeGreaterThan(1000);
    expect(long.startsWith(e.search_resp_body)).toBe(true);
    expect(e.search_resp_body).toContain("order-10");
  });

  test("a body the agent decoded is taken as it is", () => {
    const e = filled({
      http_resp_body: b64(json),
      http_resp_content_encoding: "gzip",
      http_resp_content_type: "application/json",
      tags: { resp_body_decoded: "gzip" },
    });
    expect(e.search_resp_body).toBe(json);
  });

  test("a decompression bomb stops at the bound, costs almost nothing, and the event says it was searched by its bytes", () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const started = performance.now();
    const decoded = decodeForSearch(bomb, ["gzip"]);
    const took = performance.now() - started;
    expect(decoded).toEqual({ reason: `it decodes to over ${maxDecodedBodyBytes} bytes` });
    // Inflating 64 MiB takes ~100 ms here; the bound stops it after the first 1 MiB.
    expect(took).toBeLessThan(1000);
    const e = filled({ http_resp_body: b64(bomb), http_resp_content_encoding: "gzip", http_resp_content_type: "text/plain" });
    expect(e.search_resp_body.startsWith(binaryMarker)).toBe(true);
    expect(e.tags.resp_body_search).toBe(`searched by its bytes: it decodes to over ${maxDecodedBodyBytes} bytes`);
    const small = gzipSync(Buffer.alloc(200_000));
    expect(decodeForSearch(small, ["gzip"])).toEqual({ reason: "it expands over 64 times its size" });
  });

  test("once the decoding time is spent, bodies stay as they are and say so", () => {
    // Each reading of this clock is 5 ms later: every decode takes 5 ms of an allowance of 1 ms a second.
    let clock = 0;
    const texts = new SearchTexts(() => (clock += 5), { ratePerSecond: 1, burst: 1 });
    const event = () =>
      tracedEvent({ http_resp_body: b64(gzipSync(json)), http_resp_content_encoding: "gzip", http_resp_content_type: "application/json" });
    const first = event();
    texts.fill(first);
    expect(first.search_resp_body).toBe(json);
    const second = event();
    texts.fill(second);
    expect(second.search_resp_body.startsWith(binaryMarker)).toBe(true);
    expect(second.tags.resp_body_search).toBe("searched by its bytes: the server's time for decoding bodies was spent");
  });

  test("charsets are decoded; text without one is UTF-8, or Windows-1252 for a text type that is not UTF-8", () => {
    expect(bodyForm(new Uint8Array([0x63, 0x61, 0x66, 0xe9]), "text/plain; charset=ISO-8859-1")).toBe("café");
    expect(bodyForm(new Uint8Array([0x82, 0xa0]), "text/plain; charset=shift_jis")).toBe("あ");
    expect(bodyForm(new TextEncoder().encode("grüße"), "text/plain")).toBe("grüße");
    expect(bodyForm(new Uint8Array([0x63, 0x61, 0x66, 0xe9]), "text/html")).toBe("café");
    expect(bodyForm(new TextEncoder().encode('{"q":"\\u00e9t\\u00e9"}'), "application/json")).toBe('{"q":"été"}');
  });

  test("a body that is not text is its bytes after the marker; text in an untyped body is text", () => {
    expect(bodyForm(new Uint8Array([0x0a, 0x03, 0x61, 0x62, 0x63, 0x00]), "application/x-protobuf")).toBe(
      `${binaryMarker}\u240a\u2403abc\u2400`,
    );
    expect(bodyForm(new TextEncoder().encode("plain words"), "application/octet-stream")).toBe("plain words");
    expect(bodyForm(new Uint8Array([0xff, 0xfe, 0x00]), "")).toBe(`${binaryMarker}\u00ff\u00fe\u2400`);
    // A UTF-8 sample cut in the middle of a character is still text.
    expect(bodyForm(new TextEncoder().encode("aé").subarray(0, 2), "application/octet-stream", true)).toBe("a");
  });

  test("headers become lines; whatever a publisher sent in the search fields is replaced", () => {
    const e = filled({
      http_req_headers: [
        ["X-Request-Id", "rid-5521"],
        ["Host", "shop.test"],
      ],
      http_resp_headers: [],
      http_req_body: "",
      search_req_body: "forged: always matches",
      search_resp_headers: "\nx-forged: 1\n",
    });
    expect(e.search_req_headers).toBe("\nx-request-id: rid-5521\nhost: shop.test\n");
    expect(e.search_resp_headers).toBe("");
    expect(e.search_req_body).toBe("");
  });
});
