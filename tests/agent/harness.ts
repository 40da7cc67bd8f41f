import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";

/** Real programs under `tapscope run` (bun src/main.ts), with their output and the events they produced. */
export const ROOT = resolve(import.meta.dir, "../..");
export const BUN = process.execPath;
export const MAIN = join(ROOT, "src/main.ts");

export function scratchDir(prefix = "tapscope-agent-"): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export type Running = {
  proc: Subprocess<"pipe" | "ignore", "pipe", "pipe">;
  stdout(): string;
  stderr(): string;
  exited: Promise<number>;
  events(): TracedEvent[];
  /** Resolves when stdout contains text. */
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<string>;
  waitForEvents(count: number, filter?: (e: TracedEvent) => boolean, timeoutMs?: number): Promise<TracedEvent[]>;
  stop(): Promise<number>;
};

type StartOptions = {
  traced?: boolean;
  env?: Record<string, string>;
  stdin?: string;
  cwd?: string;
  runArgs?: string[];
};

let fileCounter = 0;
const eventsDir = scratchDir("tapscope-events-");
process.on("exit", () => eventsDir.cleanup());

function collect(stream: ReadableStream<Uint8Array>, sink: { text: string }): void {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      sink.text += decoder.decode(value, { stream: true });
    }
  })().catch(() => {});
}

export async function waitUntil<T>(probe: () => T | undefined | null | false, timeoutMs = 10_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/** Starts argv traced (default) or directly, with pipes for stdout/stderr. */
export function start(argv: string[], options: StartOptions = {}): Running {
  const traced = options.traced ?? true;
  const eventsFile = join(eventsDir.dir, `events-${process.pid}-${++fileCounter}.jsonl`);
  const command = traced
    ? [BUN, MAIN, "run", "--no-publish", "--events-file", eventsFile, ...(options.runArgs ?? []), "--", ...argv]
    : argv;
  const proc = Bun.spawn(command, {
    stdin: options.stdin === undefined ? "ignore" : "pipe",
    stdout: "pipe",
    stderr: "pipe",
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, TAPSCOPE_ENDPOINT: "http://127.0.0.1:9", ...options.env },
  }) as Subprocess<"pipe" | "ignore", "pipe", "pipe">;
  if (options.stdin !== undefined) {
    const stdin = proc.stdin as unknown as { write(s: string): void; end(): void };
    stdin.write(options.stdin);
    stdin.end();
  }
  const out = { text: "" };
  const err = { text: "" };
  collect(proc.stdout, out);
  collect(proc.stderr, err);
  const events = (): TracedEvent[] => {
    if (!existsSync(eventsFile)) return [];
    const text = readFileSync(eventsFile, "utf8");
    // The run may be writing a line right now: only whole lines are events yet.
    return text
      .slice(0, text.lastIndexOf("\n") + 1)
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as TracedEvent);
  };
  const exited = proc.exited.then(async (code) => {
    await Bun.sleep(30); // let the pipes drain
    return code;
  });
  return {
    proc,
    stdout: () => out.text,
    stderr: () => err.text,
    exited,
    events,
    waitForOutput: (text, timeoutMs = 15_000) =>
      waitUntil(
        () => {
          const found = typeof text === "string" ? out.text.includes(text) : text.test(out.text);
          if (!found && proc.exitCode !== null) throw new Error(`exited (${proc.exitCode}) before printing ${text}: ${err.text}`);
          return found ? out.text : null;
        },
        timeoutMs,
        `output ${text}; stderr so far: ${err.text}`,
      ),
    waitForEvents: (count, filter = () => true, timeoutMs = 10_000) =>
      waitUntil(
        () => {
          const list = events().filter(filter);
          return list.length >= count ? list : null;
        },
        timeoutMs,
        `${count} events`,
      ),
    stop: async () => {
      proc.kill("SIGTERM");
      return exited;
    },
  };
}

export async function waitForPort(port: number, host = "127.0.0.1", timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await Bun.connect({ hostname: host, port, socket: { data() {} } })
      .then((s) => {
        s.end();
        return true;
      })
      .catch(() => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listening on ${host}:${port}`);
    await Bun.sleep(50);
  }
}

/** Sends raw bytes on one TCP connection and returns everything the server sent until it closed (or idleMs). */
export async function rawExchange(port: number, payload: Uint8Array | string, idleMs = 1500, host = "127.0.0.1"): Promise<Buffer> {
  const chunks: Buffer[] = [];
  return new Promise((done, fail) => {
    let timer: Timer | null = null;
    const finish = (socket?: { end(): void }) => {
      if (timer) clearTimeout(timer);
      socket?.end();
      done(Buffer.concat(chunks));
    };
    Bun.connect({
      hostname: host,
      port,
      socket: {
        open(socket) {
          socket.write(typeof payload === "string" ? Buffer.from(payload) : payload);
          timer = setTimeout(() => finish(socket), idleMs);
        },
        data(socket, chunk) {
          chunks.push(Buffer.from(chunk));
          if (timer) clearTimeout(timer);
          timer = setTimeout(() => finish(socket), idleMs);
        },
        close() {
          finish();
        },
        error(_s, e) {
          fail(e);
        },
      },
    }).catch(fail);
  });
}

export function hasCommand(name: string): boolean {
  return Bun.which(name) !== null;
}
