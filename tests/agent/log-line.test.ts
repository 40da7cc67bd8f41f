import { expect, test } from "bun:test";
import { formatLogLine } from "~/agent/log-line.ts";
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
