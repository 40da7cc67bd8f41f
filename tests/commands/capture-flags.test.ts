import { describe, expect, test } from "bun:test";
import { defaultRelayThreads } from "~/agent/relay/relay-threads.ts";
import { DEFAULT_PAYLOAD_LIMIT, DEFAULT_WS_MESSAGE_RATE } from "~/agent/tracer.ts";
import { parseRunArgs } from "~/commands/run-flags.ts";

const error = (args: string[]) => {
  const r = parseRunArgs(args);
  return r.ok ? null : r.error;
};

describe("tapscope run flags (shared with tapscope proxy)", () => {
  test("defaults, and each flag", () => {
    expect(parseRunArgs(["curl", "-s", "x"], {})).toEqual({
      ok: true,
      options: {
        log: false,
        service: undefined,
        payloadLimit: DEFAULT_PAYLOAD_LIMIT,
        webSocketMessageRate: DEFAULT_WS_MESSAGE_RATE,
        redact: "redact",
        eventsFile: undefined,
        publish: true,
        command: ["curl", "-s", "x"],
        tls: true,
        relayThreads: defaultRelayThreads(),
        passCredentials: false,
        isWait: false,
        allowReplay: false,
      },
    });
    const r = parseRunArgs([
      "--log",
      "--no-publish",
      "--service=api",
      "--payload-limit",
      "0",
      "--redact",
      "hash",
      "--events-file",
      "e.jsonl",
      "--relay-threads",
      "2",
      "--pass-credentials",
      "--wait",
      "--allow-replay",
      "--ws-message-rate",
      "0",
      "--",
      "node",
      "app.js",
    ]);
    expect(r).toEqual({
      ok: true,
      options: {
        log: true,
        service: "api",
        payloadLimit: 0,
        webSocketMessageRate: 0,
        redact: "hash",
        eventsFile: "e.jsonl",
        publish: false,
        command: ["node", "app.js"],
        tls: true,
        relayThreads: 2,
        passCredentials: true,
        isWait: true,
        allowReplay: true,
      },
    });
  });

  test("relay threads: cores minus one, from 1 to 4 by default; the flag, then TAPSCOPE_RELAY_THREADS", () => {
    expect([1, 2, 3, 4, 5, 8, 64].map((cores) => defaultRelayThreads(cores))).toEqual([1, 1, 2, 3, 4, 4, 4]);
    const threads = (args: string[], env: Record<string, string> = {}) => {
      const r = parseRunArgs([...args, "--", "true"], env);
      return r.ok ? r.options.relayThreads : r.error;
    };
    expect(threads([], { TAPSCOPE_RELAY_THREADS: "3" })).toBe(3);
    expect(threads(["--relay-threads", "2"], { TAPSCOPE_RELAY_THREADS: "3" })).toBe(2);
    for (const bad of ["0", "17", "1.5", "two"]) {
      expect(threads(["--relay-threads", bad])).toBe(`--relay-threads must be a whole number from 1 to 16, got "${bad}"`);
    }
    expect(threads([], { TAPSCOPE_RELAY_THREADS: "-1" })).toBe('--relay-threads must be a whole number from 1 to 16, got "-1"');
  });

  test("bad values, with the messages users see", () => {
    expect(error(["--redact", "nope", "true"])).toBe("--redact must be redact, hash or keep");
    expect(error(["--payload-limit", "-1", "true"])).toBe("--payload-limit needs a whole number of bytes");
    expect(error(["--payload-limit", "1.5", "true"])).toBe("--payload-limit needs a whole number of bytes");
    expect(error(["--payload-limit"])).toBe("--payload-limit needs a whole number of bytes");
    expect(error(["--service"])).toBe("--service needs a name");
    for (const bad of ["-1", "2.5", "lots", "", "1000001"]) {
      expect(error([`--ws-message-rate=${bad}`, "true"])).toBe(
        "--ws-message-rate needs a whole number of messages a second, 0 (all) to 1000000",
      );
    }
    expect(error(["--events-file="])).toBe("--events-file needs a file name");
    expect(error(["--bogus", "true"])).toBe("unknown option --bogus");
  });

  test("--help and a missing command both answer with the usage", () => {
    expect(error(["--help"])).toStartWith("usage: tapscope run");
    expect(error(["-h"])).toStartWith("usage: tapscope run");
    expect(error(["--log"])).toStartWith("usage: tapscope run");
  });
});
