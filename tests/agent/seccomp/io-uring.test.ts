import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ROOT, scratchDir, start } from "../harness.ts";

/** io_uring's network operations bypass seccomp: tapscope refuses the ring (ENOSYS, the "not available" answer programs fall back on) and says so. */
const scratch = scratchDir();
afterAll(() => scratch.cleanup());

test("io_uring_setup is refused with ENOSYS and the user is told why", async () => {
  const binary = join(scratch.dir, "uring");
  const cc = spawnSync("gcc", ["-O2", "-o", binary, join(ROOT, "tests/agent/fixtures/uring.c")], { encoding: "utf8" });
  expect(cc.status, cc.stderr).toBe(0);
  const traced = start([binary]);
  expect(await traced.exited).toBe(0);
  expect(traced.stdout()).toBe("ENOSYS\n");
  expect(traced.stderr()).toContain("refused io_uring");
});
