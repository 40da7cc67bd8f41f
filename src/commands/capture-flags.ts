import type { RedactMode } from "~/agent/redact.ts";
import { DEFAULT_PAYLOAD_LIMIT } from "~/agent/tracer.ts";
import type { Result } from "~/lib/result.ts";
import type { Flags } from "~/lib/server/flags.ts";

/** The flags `tapscope run` and `tapscope proxy` share: what is captured and where it goes. */
export const captureFlags = {
  log: { type: "boolean" },
  "no-publish": { type: "boolean" },
  service: { type: "string" },
  "payload-limit": { type: "string" },
  redact: { type: "string" },
  "events-file": { type: "string" },
} as const;

export type CaptureOptions = {
  log: boolean;
  service: string | undefined;
  payloadLimit: number;
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
  return {
    ok: true,
    options: { log: flags.log === true, service, payloadLimit, redact, eventsFile, publish: flags["no-publish"] !== true },
  };
}
