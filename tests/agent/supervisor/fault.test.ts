import { expect, test } from "bun:test";
import { join } from "node:path";
import { launch } from "~/agent/launch.ts";
import { BUN, MAIN, ROOT } from "../harness.ts";

/** A fault inside the supervisor never reaches the program: everything switches to passthrough, with a short report. */
test("a supervisor fault switches to passthrough; the program keeps serving", async () => {
  const said: string[] = [];
  let stdout = "";
  const launched = await launch({
    argv: ["python3", join(ROOT, "tests/agent/fixtures/addr.py"), "127.0.0.1"],
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
    observer: null,
    say: (line) => said.push(line),
    self: [BUN, MAIN],
    beforeDispatch: (m) => {
      if (m.kind === "accept") throw new Error("injected fault");
    },
    stdout: "pipe",
  });
  const reader = launched.stdout!.getReader();
  while (!/port \d+/.test(stdout)) {
    const { value, done } = await reader.read();
    if (done) break;
    stdout += new TextDecoder().decode(value);
  }
  const port = Number(/port (\d+)/.exec(stdout)![1]);
  expect(said).toContain(`intercepted 127.0.0.1:${port}`);
  const ask = async () => {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    return new Promise<string>((done) => {
      let text = "";
      socket.reload({
        socket: {
          data(_s, d) {
            text += d.toString();
          },
          close() {
            done(text);
          },
        },
      });
      socket.write("hi");
    });
  };
  for (let i = 0; i < 3; i++) {
    const reply = JSON.parse(await ask());
    expect(reply.accept[0]).toBe("127.0.0.1");
  }
  expect(said.some((line) => line.startsWith("internal error in accept"))).toBe(true);
  expect(said.join("\n")).toContain("injected fault");
  expect(launched.supervisor.isPassthrough()).toBe(true);
  process.kill(launched.pid, "SIGTERM");
  expect(await launched.exited).toBe(143);
}, 30_000);
