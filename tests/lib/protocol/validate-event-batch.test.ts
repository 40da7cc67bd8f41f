import { describe, expect, test } from "bun:test";
import { encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import { publishLimits } from "~/lib/protocol/publish.ts";
import { validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { tracedEvent } from "../../support/event-factory.ts";

const utf8 = (text: string) => new Uint8Array(Buffer.from(text, "utf8"));

describe("the bodies a frame carried as bytes", () => {
  test("are given by event beside it: the bytes its base64 decodes to, cut where the body is cut", () => {
    const longest = ((publishLimits.maxBodyChars - (publishLimits.maxBodyChars % 4)) / 4) * 3;
    const big = new Uint8Array(longest + 100).fill(0x61);
    const events = [
      { ...tracedEvent(), http_req_body: utf8('{"order":"zebra-7781"}'), http_resp_body: new Uint8Array([0, 0xff, 1]) },
      { ...tracedEvent(), http_req_body: "aGVsbG8=", http_resp_body: big },
      { ...tracedEvent(), http_req_body: new Uint8Array(0), http_resp_body: "" },
    ];
    const result = validateEventBatch(encodeEventBatch(1, events));
    if ("error" in result) throw new Error(result.message);
    const req = result.frameBodies?.get("http_req_body");
    const resp = result.frameBodies?.get("http_resp_body");
    const [first, second, third] = result.events;
    if (!first || !second || !third) throw new Error("events missing");
    for (const [frame, body] of [
      [req?.get(first), first.http_req_body],
      [resp?.get(first), first.http_resp_body],
      [resp?.get(second), second.http_resp_body],
    ] as const) {
      expect(frame?.value).toBe(body);
      expect(Buffer.from(frame?.bytes ?? []).toString("base64")).toBe(body);
    }
    expect(resp?.get(second)?.bytes?.length).toBe(longest);
    expect(second.http_resp_body_truncated).toBe(true);
    // Sent as base64, or empty: nothing from the frame.
    expect([req?.get(second), req?.get(third), resp?.get(third)]).toEqual([undefined, undefined, undefined]);
  });
});
