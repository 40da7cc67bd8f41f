import type { RedactMode } from "~/agent/redact.ts";
import { DEFAULT_PAYLOAD_LIMIT, DEFAULT_WS_MESSAGE_RATE } from "~/agent/tracer.ts";
import type { Result } from "~/lib/result.ts";
import type { Flags } from "~/lib/server/flags.ts";

/** The highest --ws-message-rate that is not "all" (0). */
const MAX_WS_MESSAGE_RATE = 1_000_000;

/** The flags `tapscope run` and `tapscope proxy` share: what is captured and where it goes. */
export const captureFlags = {
  log: { type: "boolean" },
  "no-publish": { type: "boolean" },
  service: { type: "string" },
  "payload-limit": { type: "string" },
  redact: { type: "string" },
  "events-file": { type: "string" },
  "ws-message-rate": { type: "string" },
} as const;

export type CaptureOptions = {
  log: boolean;
  service: string | undefined;
  payloadLimit: number;
  /** WebSocket messages recorded per second per connection; 0: all. */
  webSocketMessageRate: number;
  redact: RedactMode;
  eventsFile: string | undefined;
  publish: boolean;
};

export function captureOptions(flags: Flags<typeof captureFlags>): Result<{ options: CaptureOptions }> {
  const { service, redact = "redact", "events-file": eventsFile, "payload-limit": limit } = flags;
  if (eventsFile === "") return { ok: false, error: "--events-file needs a file name" };
  if (service === "") return { ok: false, error: "--service needs a name" };
  const payloadLimit = limit === undefined ? DEFAULT_PAYLOAD_LIMIT : Number(limit);
  if (limit === "" || !Number.isInteger(payloadLimit) || payloadLimit < 0) {
    return { ok: false, error: "--payload-limit needs a whole number of bytes" };
  }
  if (redact !== "redact" && redact !== "hash" && redact !== "keep") return { ok: false, error: "--redact must be redact, hash or keep" };
  const rate = flags["ws-message-rate"];
  const webSocketMessageRate = rate === undefined ? DEFAULT_WS_MESSAGE_RATE : Number(rate);
  if (rate === "" || !Number.isInteger(webSocketMessageRate) || webSocketMessageRate < 0 || webSocketMessageRate > MAX_WS_MESSAGE_RATE) {
    return { ok: false, error: `--ws-message-rate needs a whole number of messages a second, 0 (all) to ${MAX_WS_MESSAGE_RATE}` };
  }
  return {
    ok: true,
    options: {
      log: flags.log === true,
      service,
      payloadLimit,
      webSocketMessageRate,
      redact,
      eventsFile,
      publish: flags["no-publish"] !== true,
    },
  };
}
