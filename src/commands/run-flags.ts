import { defaultRelayThreads } from "~/agent/relay/relay-threads.ts";
import type { Result } from "~/lib/result.ts";
import { parseFlags } from "~/lib/server/flags.ts";
import { type CaptureOptions, captureFlags, captureOptions } from "./capture-flags.ts";

/**
 * The flags of `tapscope run [--log] [--service NAME] [--payload-limit BYTES] [--redact redact|hash|keep] -- <command>`,
 * read by the supervisor (supervise.ts); the front (run.ts) passes them on as they are.
 */
export type RunOptions = CaptureOptions & {
  command: string[];
  tls: boolean;
  relayThreads: number;
  passCredentials: boolean;
  isWait: boolean;
  allowReplay: boolean;
};

export const usage = `usage: tapscope run [options] -- <command> [args...]
  --log                    print one line per request and database call on stderr, and one for a request when it
                           has waited a second without an answer
  --service NAME           service name on every event (default: TAPSCOPE_SERVICE or the executable name)
  --payload-limit BYTES    body bytes kept per request and response and per WebSocket message, and characters per
                           statement and parameter (default 65536)
  --ws-message-rate N      WebSocket messages recorded per second on each connection, ten seconds' worth at once
                           (default 100; 0: all); the rest are counted on the connection's last event and at exit
  --redact MODE            redact (default), hash or keep secret headers, query parameters and statement values
  --events-file FILE       also append every event to FILE as JSON lines
  --no-publish             do not send events to the server (TAPSCOPE_ENDPOINT)
  --tls on|off             decrypt the program's outbound HTTPS (default on); off records TLS connections only
  --relay-threads N        threads that relay and parse inbound connections (default: cores minus one, 1 to 4;
                           TAPSCOPE_RELAY_THREADS); each connection stays on one thread
  --pass-credentials       leave TAPSCOPE_TOKEN and TAPSCOPE_LINK_ID in the program's environment (a nested
                           tapscope needs them); by default the program never sees them
  --allow-replay           let the namespace's admins resend captured requests through this run (Resend in the
                           request detail): an inbound request goes to the program's own address, an outbound
                           one to the host it originally called, nowhere else; off by default
  --wait                   when the program exits leaving processes running (a daemon, a server started with &),
                           wait for them in the foreground; by default tapscope returns as the program does and
                           traces them in the background until the last one exits`;

const runFlags = {
  ...captureFlags,
  tls: { type: "string" },
  "relay-threads": { type: "string" },
  "pass-credentials": { type: "boolean" },
  wait: { type: "boolean" },
  "allow-replay": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** The most relay threads one may ask for. */
const MAX_ASKED_RELAY_THREADS = 16;

function relayThreads(asked: string | undefined): Result<{ count: number }> {
  if (asked === undefined || asked === "") return { ok: true, count: defaultRelayThreads() };
  const count = Number(asked);
  if (!Number.isInteger(count) || count < 1 || count > MAX_ASKED_RELAY_THREADS) {
    return { ok: false, error: `--relay-threads must be a whole number from 1 to ${MAX_ASKED_RELAY_THREADS}, got "${asked}"` };
  }
  return { ok: true, count };
}

/** The options, or why not: the usage itself for --help or a missing command. */
export function parseRunArgs(args: string[], env: Record<string, string | undefined> = process.env): Result<{ options: RunOptions }> {
  const parsed = parseFlags(args, runFlags, { hasCommand: true });
  if (!parsed.ok) return parsed;
  if (parsed.flags.help) return { ok: false, error: usage };
  const capture = captureOptions(parsed.flags);
  if (!capture.ok) return capture;
  const tls = parsed.flags.tls ?? "on";
  if (tls !== "on" && tls !== "off") return { ok: false, error: "--tls must be on or off" };
  if (parsed.command.length === 0) return { ok: false, error: usage };
  const threads = relayThreads(parsed.flags["relay-threads"] ?? env.TAPSCOPE_RELAY_THREADS);
  if (!threads.ok) return threads;
  return {
    ok: true,
    options: {
      ...capture.options,
      command: parsed.command,
      tls: tls === "on",
      relayThreads: threads.count,
      passCredentials: parsed.flags["pass-credentials"] === true,
      isWait: parsed.flags.wait === true,
      allowReplay: parsed.flags["allow-replay"] === true,
    },
  };
}
