import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { ROOT, scratchDir } from "../agent/harness.ts";
import { type RunningServer, startServer } from "../e2e/harness.ts";

/**
 * The commands of the quickstart and of the Node.js and Python pages, run as a reader would, against a real server:
 * the install script (serving the CLI from this checkout), `export`s, a `tapscope run` left running, the request sent
 * to it, and the request seen. A page whose commands stop working fails here.
 *
 * Conventions the pages follow: ```sh blocks are run in order (```text blocks are not); a block `js file=NAME` is a
 * file the reader saves; a `tapscope run` line is started and left running; `{{server}}` is the server's address.
 */
let server: RunningServer;
let scratch: ReturnType<typeof scratchDir>;

beforeAll(async () => {
  scratch = scratchDir("tapscope-docs-commands-");
  const downloads = join(scratch.dir, "downloads");
  mkdirSync(downloads);
  // The "binary" install.sh fetches: the CLI of this checkout.
  const cli = join(downloads, `tapscope-linux-${process.arch === "arm64" ? "arm64" : "x64"}`);
  writeFileSync(cli, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, "src/main.ts")}" "$@"\n`);
  chmodSync(cli, 0o755);
  server = await startServer({ DOWNLOAD_DIR: downloads });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  scratch?.cleanup();
});

type Step = { kind: "sh"; text: string } | { kind: "file"; name: string; text: string };

function stepsOf(slug: string, serverUrl: string): Step[] {
  const source = readFileSync(join(ROOT, "docs/site", `${slug}.md`), "utf8").replaceAll("{{server}}", serverUrl);
  const steps: Step[] = [];
  for (const m of source.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const info = m[1]!.trim();
    const file = /\bfile=(\S+)/.exec(info)?.[1];
    if (file) steps.push({ kind: "file", name: file, text: m[2]! });
    else if (info === "sh") steps.push({ kind: "sh", text: m[2]! });
  }
  return steps;
}

/** A stack page assumes the quickstart's install: the reader has the CLI and points it at the server. */
const afterQuickstart = (serverUrl: string): Step[] => [
  { kind: "sh", text: `curl -fsSL ${serverUrl}/install.sh | sh\nexport TAPSCOPE_ENDPOINT=${serverUrl}\n` },
];

async function runPage(slug: string): Promise<{ ran: string[]; traced: string }> {
  const home = join(scratch.dir, slug);
  mkdirSync(home);
  const bin = join(home, "bin");
  const env: Record<string, string> = {
    HOME: home,
    PATH: `${bin}:${process.env.PATH}`,
    TAPSCOPE_INSTALL_DIR: bin,
  };
  const ran: string[] = [];
  let traced: Subprocess<"ignore", "pipe", "pipe"> | null = null;
  let tracedErr = "";
  try {
    const steps = stepsOf(slug, server.baseUrl);
    for (const step of slug === "quickstart" ? steps : [...afterQuickstart(server.baseUrl), ...steps]) {
      if (step.kind === "file") {
        writeFileSync(join(home, step.name), step.text);
        continue;
      }
      for (const line of step.text.split("\n").filter((l) => l.trim() && !l.trim().startsWith("#"))) {
        ran.push(line);
        const exported = /^export (\w+)=(\S+)$/.exec(line.trim());
        if (exported) {
          env[exported[1]!] = exported[2]!;
          continue;
        }
        if (line.trim().startsWith("tapscope run")) {
          traced = Bun.spawn(["bash", "-c", `exec ${line}`], { cwd: home, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
          const reader = traced.stderr.getReader();
          void (async () => {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return;
              tracedErr += new TextDecoder().decode(value);
            }
          })();
          continue;
        }
        // Anything else must succeed; a request to the traced server is retried while it starts.
        const deadline = Date.now() + 20_000;
        for (;;) {
          const done = Bun.spawnSync(["bash", "-c", line], { cwd: home, env, stdout: "pipe", stderr: "pipe" });
          if (done.exitCode === 0) break;
          if (!traced || Date.now() > deadline) throw new Error(`\`${line}\` failed (${done.exitCode}): ${done.stderr}\n${tracedErr}`);
          await Bun.sleep(200);
        }
      }
    }
    // The request shows up: --log prints one line per request once it is complete.
    const deadline = Date.now() + 10_000;
    while (!/ 200 GET /.test(tracedErr) && Date.now() < deadline) await Bun.sleep(100);
    return { ran, traced: tracedErr };
  } finally {
    traced?.kill("SIGINT");
    await traced?.exited;
  }
}

describe("the docs' commands work as written", () => {
  test("quickstart: install from this server, trace python's http.server, see the request and the link", async () => {
    const { ran, traced } = await runPage("quickstart");
    expect(ran[0]).toBe(`curl -fsSL ${server.baseUrl}/install.sh | sh`);
    expect(traced).toContain(`See your requests live: ${server.baseUrl}/link/`);
    expect(traced).toMatch(/ 200 GET +\/ /);
  }, 90_000);

  test("Node.js: the page's server.js under tapscope run answers and its request is traced", async () => {
    const { traced } = await runPage("nodejs-express");
    expect(traced).toMatch(/ 200 GET +\/hello /);
  }, 90_000);

  test("Python: http.server under tapscope run", async () => {
    const { traced } = await runPage("python-fastapi");
    expect(traced).toMatch(/ 200 GET +\/ /);
  }, 90_000);
});
