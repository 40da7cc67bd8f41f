import { describe, expect, test } from "bun:test";
import { DEFAULT_PAYLOAD_LIMIT } from "~/agent/tracer.ts";
import { parseRunArgs } from "~/commands/run.ts";

const error = (args: string[]) => {
  const r = parseRunArgs(args);
  return r.ok ? null : r.error;
};

describe("tapscope run flags (shared with tapscope proxy)", () => {
  test("defaults, and each flag", () => {
    expect(parseRunArgs(["curl", "-s", "x"])).toEqual({
      ok: true,
      options: {
        log: false,
        service: undefined,
        payloadLimit: DEFAULT_PAYLOAD_LIMIT,
        redact: "redact",
        eventsFile: undefined,
        publish: true,
        command: ["curl", "-s", "x"],
        tls: true,
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
        redact: "hash",
        eventsFile: "e.jsonl",
        publish: false,
        command: ["node", "app.js"],
        tls: true,
      },
    });
  });

  test("bad values, with the messages users see", () => {
    expect(error(["--redact", "nope", "true"])).toBe("--redact must be redact, hash or keep");
    expect(error(["--payload-limit", "-1", "true"])).toBe("--payload-limit needs a whole number of bytes");
    expect(error(["--payload-limit", "1.5", "true"])).toBe("--payload-limit needs a whole number of bytes");
    expect(error(["--payload-limit"])).toBe("--payload-limit needs a whole number of bytes");
    expect(error(["--service"])).toBe("--service needs a name");
    expect(error(["--events-file="])).toBe("--events-file needs a file name");
    expect(error(["--bogus", "true"])).toBe("unknown option --bogus");
  });

  test("--help and a missing command both answer with the usage", () => {
    expect(error(["--help"])).toStartWith("usage: tapscope run");
    expect(error(["-h"])).toStartWith("usage: tapscope run");
    expect(error(["--log"])).toStartWith("usage: tapscope run");
  });
});
