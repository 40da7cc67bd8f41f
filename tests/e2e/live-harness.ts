import { join } from "node:path";
import type { Frame, FrameLocator, Page } from "playwright-core";
import { root } from "./harness.ts";

const bun = join(root, "node_modules/.bin/bun");

export type RunningProgram = { port: number; linkUrl: string | null; output: string[]; stop: () => Promise<void> };

/**
 * LIVE_E2E_SELF_PUBLISH=1 runs the program without the capture engine, publishing its own events through
 * src/agent/publish.ts: for machines where seccomp user notification is unavailable.
 */
export const isSelfPublishing = process.env.LIVE_E2E_SELF_PUBLISH === "1";

/** A "third-party API" outside the traced program, called by its /checkout. */
export function startUpstream(): { url: string; stop: () => void } {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async () => {
      await Bun.sleep(30);
      return Response.json({ charged: true, id: "ch_123" });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

/**
 * Runs tests/e2e/live-program.ts under `tapscope run` (the real capture engine and publisher), resolving once
 * the program listens; linkUrl is the link tapscope printed (runs without a token print one).
 */
export async function startProgram(endpoint: string, options: { token?: string; upstreamUrl: string }): Promise<RunningProgram> {
  const program = [bun, join(root, "tests/e2e/live-program.ts")];
  const argv = isSelfPublishing ? program : [bun, join(root, "src/main.ts"), "run", "--", ...program];
  const proc = Bun.spawn(argv, {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      TAPSCOPE_ENDPOINT: endpoint,
      TAPSCOPE_TOKEN: options.token ?? "",
      UPSTREAM_URL: options.upstreamUrl,
      LIVE_PROGRAM_SELF_PUBLISH: isSelfPublishing ? "1" : "",
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const output: string[] = [];
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      output.push(decoder.decode(value));
    }
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const deadline = Date.now() + 20_000;
  let port = 0;
  let linkUrl: string | null = null;
  for (;;) {
    const text = output.join("");
    port = Number(/listening (\d+)/.exec(text)?.[1] ?? 0);
    linkUrl = /(?:See your requests live:|watch live at) (\S+)/.exec(text)?.[1] ?? null;
    // A run without a token prints its link before the program starts; give it a moment with a token.
    if (port && (linkUrl || options.token)) break;
    if (proc.exitCode !== null) throw new Error(`program exited (${proc.exitCode}): ${text}`);
    if (Date.now() > deadline) throw new Error(`program did not start: ${text}`);
    await Bun.sleep(50);
  }
  return {
    port,
    linkUrl,
    output,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** The live frame inside a page (the Live screen or a shared link). */
export function liveFrame(page: Page): { locator: FrameLocator; frame: () => Frame } {
  return {
    locator: page.frameLocator("iframe"),
    frame: () => {
      const frame = page.frames().find((f) => new URL(f.url()).pathname === "/iframer");
      if (!frame) throw new Error("no live frame");
      return frame;
    },
  };
}

/** Runs a shell command (a copied cURL line) and returns its stdout. */
export async function sh(command: string): Promise<string> {
  const proc = Bun.spawn(["sh", "-c", command], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`command failed: ${command}\n${await new Response(proc.stderr).text()}`);
  return out;
}
