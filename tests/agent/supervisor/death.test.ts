import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { freePort } from "../../support/ports.ts";
import { start, waitForPort, waitUntil } from "../harness.ts";

/** A program must not outlive its supervisor: after kill -9 of tapscope it is gone too, so a process manager sees it. */

/** The direct children of pid, from every thread's children list. */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      found.push(...readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ").filter(Boolean).map(Number));
    } catch {}
  }
  return found;
}

/** Gone, or a zombie nobody has reaped yet (a container's pid 1 may never reap). */
function isGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

test("kill -9 of tapscope takes the traced program with it within a second or two", async () => {
  const port = await freePort();
  const run = start(["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"]);
  let programPid = 0;
  let supervisorPid = 0;
  try {
    await waitForPort(port);
    // `tapscope run` (the front) -> its supervisor -> the program.
    supervisorPid = await waitUntil(() => childrenOf(run.proc.pid)[0], 5000, "the supervisor's pid");
    programPid = await waitUntil(() => childrenOf(supervisorPid)[0], 5000, "the program's pid");
    expect(readFileSync(`/proc/${programPid}/cmdline`, "utf8")).toMatch(/^[^\0]*python3\0-m\0http\.server/);
    run.proc.kill("SIGKILL");
    await run.exited;
    const killedAt = Date.now();
    await waitUntil(() => isGone(programPid) && isGone(supervisorPid), 2000, "the supervisor and the program to die with tapscope");
    expect(Date.now() - killedAt).toBeLessThan(2000);
    // Its port is closed, not left half-alive.
    const connected = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
      (s) => {
        s.end();
        return true;
      },
      () => false,
    );
    expect(connected).toBe(false);
  } finally {
    for (const pid of [programPid, supervisorPid]) if (pid && !isGone(pid)) process.kill(pid, "SIGKILL");
  }
}, 30_000);

test("a long-lived program is not killed while its supervisor lives (the signal is tied to the right thread)", async () => {
  const port = await freePort();
  const run = start(["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"]);
  try {
    await waitForPort(port);
    // Long enough for Bun's worker and pool threads to come and go.
    for (let i = 0; i < 6; i++) {
      expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toContain("Directory listing");
      await Bun.sleep(500);
    }
    expect(run.proc.exitCode).toBeNull();
  } finally {
    expect(await run.stop()).not.toBe(0);
  }
}, 30_000);
