import { describe, expect, test } from "bun:test";
import { brotliCompressSync, deflateRawSync, gzipSync, zstdCompressSync } from "node:zlib";
import { binaryMarker, isBinaryForm } from "~/lib/filter/content.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import { validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { bodyForm, decodeForSearch, maxDecodedBodyBytes, SearchTexts } from "~/store/search-text.ts";
import { canStoreOnce, headerLinesMarker, isHeaderLines, textBodyMarker } from "~/store/stored-body.ts";
import { eventLayout, toEventRows } from "~/store/table.ts";
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

describe("made from the frame's bytes, and checked once for the store", () => {
  const reqColumn = eventLayout.columns.findIndex((c) => c.name === "http_req_body");
  const reqHeadersColumn = eventLayout.columns.findIndex((c) => c.name === "http_req_headers");
  const storedOf = (e: TracedEvent) => {
    const rows = toEventRows([e]);
    return [(rows.columns[reqColumn] as string[])[0], (rows.columns[reqHeadersColumn] as string[])[0]];
  };
  const utf8 = (text: string) => new Uint8Array(Buffer.from(text, "utf8"));
  const cases: Array<[string, Uint8Array, Partial<TracedEvent>]> = [
    ["JSON", utf8('{"order":"zebra-7781","city":"Zürich 😀"}'), {}],
    ["JSON with escapes", utf8('{"city":"Z\\u00fcrich","path":"a\\/b","n":"x\\ny"}'), {}],
    ["a BOM", utf8('\ufeff{"a":1}'), {}],
    ["cut inside a character", utf8("cut café").subarray(0, 8), { http_req_body_truncated: true, http_req_content_type: "text/plain" }],
    ["cut at a character's end", utf8("cut café"), { http_req_body_truncated: true, http_req_content_type: "text/plain" }],
    ["gzip", new Uint8Array(gzipSync('{"order":"zebra-7781"}')), { http_req_content_encoding: "gzip" }],
    ["Windows-1252", new Uint8Array(Buffer.from("café €", "latin1")), { http_req_content_type: "text/plain" }],
    ["a charset", utf8("plain ascii"), { http_req_content_type: "text/plain; charset=iso-8859-1" }],
    ["binary", new Uint8Array([0x0a, 0x00, 0xff, 0x41]), { http_req_content_type: "application/octet-stream" }],
    ["the binary marker in text", utf8("\ufdd0 marker"), { http_req_content_type: "text/plain" }],
    ["CRLF and control characters", utf8("tab\tand\x00nul\r\n"), { http_req_content_type: "text/plain" }],
  ];
  const headerCases: Array<Array<[string, string]>> = [
    [
      ["x-request-id", "rid-5521"],
      ["accept", "*/*"],
    ],
    [["X-Request-Id", "rid-5521"]],
    [["x-note", "one\r\ntwo"]],
    [["x-odd: name", "v"]],
    [["x-half", "\ud800 alone"]],
    [],
  ];

  test("each body and header list gives the search text and stored row that decoding its base64 and checking gives", () => {
    for (const [name, bytes, overrides] of cases) {
      for (const headers of headerCases) {
        const event = tracedEvent({ http_req_content_type: "application/json", ...overrides, http_req_headers: headers });
        const sent = { ...event, http_req_body: bytes, http_resp_body: new Uint8Array(0) };
        const result = validateEventBatch(encodeEventBatch(1, [sent]));
        if ("error" in result) throw new Error(result.message);
        const [fromFrame] = result.events;
        if (!fromFrame) throw new Error("no event");
        new SearchTexts().fill(fromFrame, result.frameBodies?.get("http_req_body")?.get(fromFrame));
        const fromBase64 = tracedEvent({ ...fromFrame, search_req_body: "", search_req_headers: "" });
        new SearchTexts().fill(fromBase64);
        const form = fromBase64.search_req_body;
        const isOnce = form !== "" && !isBinaryForm(form) && canStoreOnce(form, bytes);
        const isLines = isHeaderLines(headers, fromBase64.search_req_headers);
        expect([name, headers, fromFrame.search_req_body, fromFrame.search_req_headers]).toEqual([
          name,
          headers,
          form,
          fromBase64.search_req_headers,
        ]);
        expect([name, headers, ...storedOf(fromFrame)]).toEqual([
          name,
          headers,
          isOnce ? textBodyMarker : fromFrame.http_req_body,
          isLines ? headerLinesMarker : JSON.stringify(headers),
        ]);
        expect(storedOf(fromBase64)).toEqual(storedOf(fromFrame));
      }
    }
  });

  test("the frame's bytes are read while the event holds the base64 they came as; a body replaced since is decoded", () => {
    const frame = { value: b64("zebra-7781"), bytes: utf8("from the frame") };
    const kept = tracedEvent({ http_req_body: frame.value, http_req_content_type: "text/plain" });
    new SearchTexts().fill(kept, frame);
    expect(kept.search_req_body).toBe("from the frame");
    const replaced = tracedEvent({ http_req_body: b64("redacted"), http_req_content_type: "text/plain" });
    new SearchTexts().fill(replaced, frame);
    expect(replaced.search_req_body).toBe("redacted");
    expect(storedOf(replaced)[0]).toBe(textBodyMarker);
  });

  test("a header list replaced or lines changed after they were made are checked again when stored", () => {
    const e = filled({ http_req_headers: [["accept", "*/*"]] });
    expect(storedOf(e)[1]).toBe(headerLinesMarker);
    e.http_req_headers = [["Accept", "*/*"]];
    expect(storedOf(e)[1]).toBe(JSON.stringify([["Accept", "*/*"]]));
    e.http_req_headers = [["accept", "text/html"]];
    e.search_req_headers = "\naccept: text/html\n";
    expect(storedOf(e)[1]).toBe(headerLinesMarker);
  });
});

describe("read once, the same every time", () => {
  test("a header name or Content-Type seen before is read as it is, whatever was seen before it", () => {
    const lower = filled({ http_req_headers: [["x-seen", "1"]], http_req_body: b64("café"), http_req_content_type: "text/plain" });
    const upper = filled({
      http_req_headers: [["X-Seen", "1"]],
      http_req_body: b64(Buffer.from("café", "latin1")),
      http_req_content_type: "text/plain",
    });
    const charset = filled({
      http_req_headers: [["x-seen", "a\nb"]],
      http_req_body: b64(Buffer.from("café", "latin1")),
      http_req_content_type: "text/plain; charset=iso-8859-1",
    });
    expect([lower.search_req_headers, upper.search_req_headers, charset.search_req_headers]).toEqual([
      "\nx-seen: 1\n",
      "\nx-seen: 1\n",
      "\nx-seen: a b\n",
    ]);
    expect([lower.search_req_body, upper.search_req_body, charset.search_req_body]).toEqual(["café", "café", "café"]);
    const headersColumn = eventLayout.columns.findIndex((c) => c.name === "http_req_headers");
    const stored = toEventRows([lower, upper, charset]).columns[headersColumn] as string[];
    expect(stored).toEqual([headerLinesMarker, JSON.stringify([["X-Seen", "1"]]), JSON.stringify([["x-seen", "a\nb"]])]);
  });

  test("thousands of distinct and long names and Content-Types are each read right", () => {
    for (let i = 0; i < 3000; i++) {
      const name = `x-${"n".repeat(i % 300)}-${i}`;
      const e = filled({
        http_req_headers: [[i % 2 ? name.toUpperCase() : name, "v"]],
        http_req_body: b64("{}"),
        http_req_content_type: `application/vnd.${i}${"x".repeat(i % 400)}+json`,
      });
      expect(e.search_req_headers).toBe(`\n${name}: v\n`);
      expect(e.search_req_body).toBe("{}");
    }
  });
});
