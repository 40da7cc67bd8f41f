import { join } from "node:path";
import type { Frame, FrameLocator, Page } from "playwright-core";
import { root } from "./harness.ts";

const bun = join(root, "node_modules/.bin/bun");

export type RunningProgram = { port: number; linkUrl: string | null; output: string[]; stop: () => Promise<void> };

/**
 * Starts tests/e2e/live-program.ts: a real HTTP program whose exchanges reach the server through the real
 * publisher (src/agent/publish.ts). Resolves once it listens; linkUrl is the link it printed (no token).
 */
export async function startProgram(endpoint: string, token?: string): Promise<RunningProgram> {
  const proc = Bun.spawn([bun, join(root, "tests/e2e/live-program.ts")], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TAPSCOPE_ENDPOINT: endpoint, TAPSCOPE_TOKEN: token ?? "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const output: string[] = [];
  const decoder = new TextDecoder();
  const reader = proc.stdout.getReader();
  void (async () => {
    const errReader = proc.stderr.getReader();
    for (;;) {
      const { done, value } = await errReader.read();
      if (done) return;
      output.push(decoder.decode(value));
    }
  })();
  let text = "";
  const deadline = Date.now() + 20_000;
  while (!/listening \d+/.test(text)) {
    if (Date.now() > deadline) throw new Error(`program did not start: ${text}${output.join("")}`);
    const { done, value } = await reader.read();
    if (done) throw new Error(`program exited: ${text}${output.join("")}`);
    text += decoder.decode(value);
  }
  output.push(text);
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      output.push(decoder.decode(value));
    }
  })();
  return {
    port: Number(/listening (\d+)/.exec(text)![1]),
    linkUrl: /watch live at (\S+)/.exec(text)?.[1] ?? null,
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
