import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { connect } from "node:net";
import { join } from "node:path";
import { ROOT, scratchDir, start } from "../harness.ts";

/** accept4 flags are kept exactly, and a dup'd listener is the same intercepted socket. */
const scratch = scratchDir();
afterAll(() => scratch.cleanup());

test("SOCK_NONBLOCK/SOCK_CLOEXEC are kept on accepted sockets; a dup2'd listener works and reports the real peer", async () => {
  const binary = join(scratch.dir, "flags");
  const cc = spawnSync("gcc", ["-O2", "-o", binary, join(ROOT, "tests/agent/fixtures/flags.c")], { encoding: "utf8" });
  expect(cc.status, cc.stderr).toBe(0);
  const r = start([binary]);
  const out = await r.waitForOutput(/port \d+/);
  const port = Number(/port (\d+)/.exec(out)![1]);
  const locals: string[] = [];
  for (let i = 0; i < 2; i++) {
    await new Promise<void>((done, fail) => {
      const socket = connect(port, "127.0.0.1", () => {
        locals.push(`${socket.localAddress}:${socket.localPort}`);
        done();
      });
      socket.on("error", fail);
    });
    await r.waitForOutput(i === 0 ? "accept4" : "accept-dup");
  }
  expect(await r.exited).toBe(0);
  expect(r.stdout()).toBe(
    `port ${port}\naccept4 nonblock=1 cloexec=1 peer=${locals[0]}\naccept-dup nonblock=0 cloexec=0 peer=${locals[1]}\n`,
  );
});
