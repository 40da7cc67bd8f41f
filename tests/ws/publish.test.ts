import { expect, test } from "bun:test";
import { publisherControlKind } from "~/lib/protocol/replay.ts";
import { parseControl } from "~/ws/publish.ts";

test("a publisher's hello and replay answers are told apart by their start and checked field by field", () => {
  expect(publisherControlKind('{"type":"hello","allowsReplay":true}')).toBe("hello");
  expect(publisherControlKind('{"type":"events","seq":1,"events":[]}')).toBeNull();
  expect(parseControl('{"type":"hello","allowsReplay":true,"service":"api"}')).toEqual({
    type: "hello",
    allowsReplay: true,
    service: "api",
  });
  expect(parseControl('{"type":"hello","allowsReplay":"yes"}')).toBeNull();
  expect(parseControl('{"type":"hello"')).toBeNull();
  expect(parseControl(JSON.stringify({ type: "replayed", id: "x".repeat(65), ok: true, status: 200 }))).toBeNull();
  expect(parseControl(JSON.stringify({ type: "replayed", id: "a", ok: true, status: 1000 }))).toBeNull();
  // Anything else a hostile run sends is cut to its bounds or dropped: not base64, not headers, an endless error.
  expect(
    parseControl(
      JSON.stringify({
        type: "replayed",
        id: "a",
        ok: true,
        status: 200,
        body: "<script>",
        headers: [["a", "b"], ["c"], 5],
        durationUs: -4,
      }),
    ),
  ).toEqual({
    type: "replayed",
    id: "a",
    ok: true,
    eventId: "",
    status: 200,
    headers: [["a", "b"]],
    body: "",
    isBodyTruncated: false,
    durationUs: 0,
  });
  const failed = parseControl(JSON.stringify({ type: "replayed", id: "a", ok: false, error: "e".repeat(5000) }));
  expect(failed?.type === "replayed" && !failed.ok && failed.error.length).toBe(1000);
});
