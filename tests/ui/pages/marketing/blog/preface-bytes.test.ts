import { expect, test } from "bun:test";
import { prefaceBytes, printable, RANGES } from "~/ui/pages/marketing/blog/preface-bytes.ts";

test("the preface and SETTINGS frame are the bytes an HTTP/2 client sends (RFC 9113)", () => {
  const bytes = prefaceBytes();
  expect(bytes.length).toBe(51);
  expect(Buffer.from(bytes.subarray(0, 24)).toString("latin1")).toBe("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  // length 18, type SETTINGS, no flags, stream 0
  expect([...bytes.subarray(24, 33)]).toEqual([0, 0, 18, 4, 0, 0, 0, 0, 0]);
  // MAX_CONCURRENT_STREAMS 65535, ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 16 x 65535 = 1048560
  expect(Buffer.from(bytes.subarray(33)).toString("hex")).toBe("00030000ffff000200000000" + "0004000ffff0");
});

test("the explained ranges cover the frame exactly: header 9 bytes, three 6-byte parameters", () => {
  const by = Object.fromEntries(RANGES.map((r) => [r.id, [r.start, r.end]]));
  expect(by).toEqual({
    preface: [0, 24],
    settings: [24, 51],
    header: [24, 33],
    payload: [33, 51],
    "max-streams": [33, 39],
    push: [39, 45],
    window: [45, 51],
  });
});

test("the text column shows printable bytes 33-126, dots for the rest", () => {
  expect([32, 33, 80, 126, 127, 13].map(printable).join("")).toBe(".!P~..");
});
