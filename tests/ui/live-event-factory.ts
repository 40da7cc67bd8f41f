import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent } from "../support/event-factory.ts";

let seq = 0;

/** A plausible inbound HTTP event with deterministic ids and times; override what a test is about. */
export function makeEvent(overrides: Partial<TracedEvent> = {}): TracedEvent {
  seq++;
  return tracedEvent({
    time: 1_763_700_000_000_000 + seq * 1000,
    event_id: `00000000-0000-4000-8000-${String(seq).padStart(12, "0")}`,
    hostname: "box",
    process_id: 42,
    process_executable_size: 1,
    http_duration: 12_345,
    http_req_path: `/items/${seq}`,
    http_req_headers: [
      ["Host", "localhost:8080"],
      ["User-Agent", "test"],
    ],
    http_resp_body: btoa("{}"),
    timing_send: 100,
    timing_wait: 12_000,
    timing_receive: 245,
    bytes_sent: 100,
    bytes_received: 50,
    ...overrides,
  });
}

export const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
