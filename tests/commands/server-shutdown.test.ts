import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");

/** Starts the real CLI (`bun src/main.ts server`) on a temp DATA_DIR and waits for its listening line. */
async function startServer(dataDir: string) {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "server"], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: "0", DATABASE_URL: "", SMTP_URL: "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stderr.getReader();
  let log = "";
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    log += new TextDecoder().decode(value);
    const line = log.split("\n").find((l) => l.includes("listening"));
    if (line) {
      const port = JSON.parse(line).port as number;
      return { proc, port, reader, log: () => log };
    }
  }
  proc.kill("SIGKILL");
  throw new Error(`server did not start:\n${log}`);
}

test("the server answers, then exits 0 on SIGTERM after closing the database", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-shutdown-"));
  try {
    const { proc, port, reader } = await startServer(dataDir);
    const health = await fetch(`http://127.0.0.1:${port}/api/health`);
    expect(await health.json()).toEqual({ ok: true });
    // An in-flight request started just before the signal still gets its answer.
    const inFlight = fetch(`http://127.0.0.1:${port}/api/GetSelf`);
    await Bun.sleep(5);
    proc.kill("SIGTERM");
    expect((await inFlight).status).toBe(401);
    const code = await proc.exited;
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(code).toBe(0);
    expect(rest).toContain("shutting down");
    // New connections are refused once it is gone.
    await expect(fetch(`http://127.0.0.1:${port}/api/health`)).rejects.toThrow();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 60_000);
