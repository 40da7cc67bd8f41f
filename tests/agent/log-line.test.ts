import { expect, test } from "bun:test";
import { formatLogLine, formatPendingLine } from "~/agent/log-line.ts";
import { tracedEvent } from "../support/event-factory.ts";

test("a request that got no answer shows the time it waited and why, never 0µs", () => {
  const line = formatLogLine(
    tracedEvent({ http_req_path: "/hang", http_resp_status_code: 0, http_duration: 2_004_000, http_unanswered: "client_aborted" }),
  );
  expect(line).toMatch(/ --- GET {2}\/hang +2\.00s {2}unanswered: client aborted$/);
  expect(formatLogLine(tracedEvent({ http_req_path: "/ok", http_duration: 1500 }))).not.toContain("unanswered");
  // Only the reasons the agent writes reach a terminal as they are.
  const hostile = formatLogLine(tracedEvent({ http_resp_status_code: 0, http_unanswered: "x\x1b[2J" }));
  expect(hostile).toContain("unanswered: x\\x1b[2J");
});

test("a request still waiting gets a line of its own: ··· in the status column, and the wait or `pending`", () => {
  const p = {
    event_id: "00000000-0000-4000-8000-000000000001",
    parent_event_id: "",
    time: Date.UTC(2026, 10, 27, 12, 4, 5, 1) * 1000,
    service: "api",
    http_version: "1.1",
    http_req_method: "GET",
    http_req_host: "api.example.com",
    http_req_path: "/hang\x1b[2J",
    http_is_outgoing: false,
    http_server_addr: "127.0.0.1:8080",
  };
  const waiting = formatPendingLine(p, { waitedMicros: 1_040_000 });
  expect(waiting).toMatch(/^\d\d:\d\d:\d\d\.001 {2}··· GET {2}\/hang\\x1b\[2J +waiting 1\.0s$/);
  expect(formatPendingLine(p)).toMatch(/··· GET {2}\/hang\\x1b\[2J +pending$/);
  // Outbound: an arrow and the host, as the request's own line has them.
  expect(formatPendingLine({ ...p, http_is_outgoing: true })).toContain(" →··· GET  api.example.com/hang");
  expect(formatPendingLine(p, { color: true })).toContain("\x1b[33m···\x1b[0m GET ");
});
