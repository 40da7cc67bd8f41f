import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { SearchTexts } from "~/store/search-text.ts";
import { headerLinesMarker, headersOfLines, textBodyMarker } from "~/store/stored-body.ts";
import { eventLayout, eventsOfRows, toEventRows } from "~/store/table.ts";
import { tracedEvent } from "../support/event-factory.ts";

const utf8 = (text: string) => Buffer.from(text, "utf8");
const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");
const column = eventLayout.columns.findIndex((c) => c.name === "http_req_body");

function filled(bytes: Uint8Array, overrides: Partial<TracedEvent> = {}): TracedEvent {
  const e = tracedEvent({
    http_req_body: b64(bytes),
    http_req_content_type: "application/json",
    http_req_content_encoding: "",
    ...overrides,
  });
  new SearchTexts().fill(e);
  return e;
}

/** What the store writes in the request body column for the event. */
const storedReqBody = (e: TracedEvent) => (toEventRows([e]).columns[column] as string[])[0];

describe("a body is stored once only where its search text is exactly its bytes", () => {
  test("text whose search form is its UTF-8 bytes: JSON, CRLF, astral characters, control characters, a cut at a character's end", () => {
    for (const [bytes, overrides] of [
      [utf8('{"order":"zebra-7781","city":"Zürich"}'), {}],
      [utf8('{"a":"😀 𝔘"}\r\n{"b":2}\r\n'), {}],
      [utf8("tab\tand\x00nul\x7f"), { http_req_content_type: "text/plain" }],
      [utf8("cut after café"), { http_req_body_truncated: true, http_req_content_type: "text/plain" }],
      [utf8("plain ascii"), { http_req_content_type: "text/plain; charset=iso-8859-1" }],
    ] as const) {
      expect([String(bytes), storedReqBody(filled(bytes, overrides))]).toEqual([String(bytes), textBodyMarker]);
    }
  });

  test("bodies whose search form differs keep their base64: escapes, a BOM, gzip, binary, a cut character, another charset, empty", () => {
    for (const [bytes, overrides] of [
      [utf8('{"city":"Z\\u00fcrich"}'), {}],
      [utf8('{"path":"a\\/b"}'), {}],
      [utf8('\ufeff{"a":1}'), {}],
      [gzipSync('{"a":1}'), { http_req_content_encoding: "gzip" }],
      [new Uint8Array([0x0a, 0x00, 0xff, 0x41]), { http_req_content_type: "application/octet-stream" }],
      [utf8("café").subarray(0, 4), { http_req_body_truncated: true, http_req_content_type: "text/plain" }],
      [Buffer.from("café", "latin1"), { http_req_content_type: "text/plain; charset=iso-8859-1" }],
      [utf8("\ufdd0 marker"), { http_req_content_type: "text/plain" }],
      [new Uint8Array(0), {}],
    ] as const) {
      const e = filled(bytes, overrides);
      expect([String(bytes), storedReqBody(e)]).toEqual([String(bytes), e.http_req_body]);
    }
  });

  test("a body or search text changed after the search text was made is stored as it is then", () => {
    const changedBody = filled(utf8('{"a":1}'));
    changedBody.http_req_body = b64('{"a":2}');
    expect(storedReqBody(changedBody)).toBe(b64('{"a":2}'));
    const changedText = filled(utf8('{"a":1}'));
    changedText.search_req_body = "something else";
    expect(storedReqBody(changedText)).toBe(b64('{"a":1}'));
    const copied = { ...filled(utf8('{"a":1}')) };
    expect(storedReqBody(copied)).toBe(b64('{"a":1}'));
  });

  test("a published body that is the marker itself is stored as no bytes, never read as a body stored once", () => {
    const e = tracedEvent({ http_req_body: textBodyMarker });
    new SearchTexts().fill(e);
    expect(storedReqBody(e)).toBe("");
  });

  test("rows made into events again (a remote worker's insert) give each body back", () => {
    const e = filled(utf8('{"order":"zebra-7781"}'), { http_resp_body: b64("reply 😀"), http_resp_content_type: "text/plain" });
    const rows = toEventRows([e]);
    expect((rows.columns[column] as string[])[0]).toBe(textBodyMarker);
    const [back] = eventsOfRows([rows]);
    expect([back?.http_req_body, back?.http_resp_body]).toEqual([e.http_req_body, e.http_resp_body]);
  });
});

type Headers = Array<[string, string]>;
const reqHeadersColumn = eventLayout.columns.findIndex((c) => c.name === "http_req_headers");
const respHeadersColumn = eventLayout.columns.findIndex((c) => c.name === "http_resp_headers");

function withHeaders(req: Headers, resp: Headers = [["content-type", "text/plain"]]): TracedEvent {
  const e = tracedEvent({ http_req_headers: req, http_resp_headers: resp });
  new SearchTexts().fill(e);
  return e;
}

/** What the store writes in the request header column for the event. */
const storedReqHeaders = (e: TracedEvent) => (toEventRows([e]).columns[reqHeadersColumn] as string[])[0];

describe("a header list is stored once only where its lines give it back exactly", () => {
  test("lower-case names, pseudo-headers, duplicates, empty and non-ASCII values, colons in values: the marker", () => {
    for (const headers of [
      [
        [":authority", "a.test"],
        [":path", "/x?y=1"],
        ["accept", "*/*"],
      ],
      [
        ["set-cookie", "a=1"],
        ["set-cookie", "b=2"],
        ["set-cookie", "a=1"],
      ],
      [
        ["x-empty", ""],
        ["x-city", "Zürich 😀"],
        ["x-colons", ": a: b :"],
        ["x-tab", "a\tb"],
      ],
      [["", ""]],
      [["x:", " leading space"]],
    ] as Headers[]) {
      const e = withHeaders(headers);
      expect([headers, storedReqHeaders(e)]).toEqual([headers, headerLinesMarker]);
      expect(headersOfLines(e.search_req_headers)).toEqual(headers);
    }
  });

  test('lists the lines would alter keep their JSON: upper case, line breaks, a name with ": ", a lone surrogate, empty', () => {
    for (const headers of [
      [["Content-Type", "text/plain"]],
      [
        ["x-straße", "1"],
        ["X-Ünicode", "2"],
      ],
      [["x-note", "one\r\ntwo"]],
      [["x-note", "one\rtwo"]],
      [["x-odd: name", "v"]],
      [["x-odd\nname", "v"]],
      [["x-half", "\ud800 alone"]],
      [],
    ] as Headers[]) {
      const e = withHeaders(headers);
      expect([headers, storedReqHeaders(e)]).toEqual([headers, JSON.stringify(headers)]);
    }
  });

  test("headers or lines changed after the lines were made are stored as they are then", () => {
    const changedHeaders = withHeaders([["accept", "*/*"]]);
    changedHeaders.http_req_headers = [["accept", "text/html"]];
    expect(storedReqHeaders(changedHeaders)).toBe(JSON.stringify([["accept", "text/html"]]));
    const changedLines = withHeaders([["accept", "*/*"]]);
    changedLines.search_req_headers = "\naccept: text/html\n";
    expect(storedReqHeaders(changedLines)).toBe(JSON.stringify([["accept", "*/*"]]));
    const noLines = withHeaders([["accept", "*/*"]]);
    noLines.search_req_headers = "";
    expect(storedReqHeaders(noLines)).toBe(JSON.stringify([["accept", "*/*"]]));
  });

  test("lines that are not a header form read back as what they hold, never an error", () => {
    expect(headersOfLines("")).toEqual([]);
    expect(headersOfLines("\nno colon\n")).toEqual([["no colon", ""]]);
    expect(headersOfLines("\na: 1\nb: 2")).toEqual([
      ["a", "1"],
      ["b", "2"],
    ]);
  });

  test("rows made into events again (a remote worker's insert) give each list back", () => {
    const req: Headers = [
      ["x-request-id", "rid-1"],
      ["x-city", "Zürich"],
    ];
    const resp: Headers = [["Content-Type", "text/plain"]];
    const e = withHeaders(req, resp);
    const rows = toEventRows([e]);
    expect((rows.columns[reqHeadersColumn] as string[])[0]).toBe(headerLinesMarker);
    expect((rows.columns[respHeadersColumn] as string[])[0]).toBe(JSON.stringify(resp));
    const [back] = eventsOfRows([rows]);
    expect([back?.http_req_headers, back?.http_resp_headers]).toEqual([req, resp]);
  });
});
