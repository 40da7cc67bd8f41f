import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "bun";
import { freePort } from "../../support/ports.ts";
import { BUN, MAIN, ROOT } from "../harness.ts";

/**
 * `tapscope run` as root binds and dials on the program's behalf. A program that dropped its privileges must get
 * what it would get untraced: EACCES for a port below 1024, EADDRINUSE for joining another user's SO_REUSEPORT
 * group, and its outbound connections owned by its own user (what a firewall's owner match and `ss -e` see).
 */
const NOBODY = "65534";

function socketOwner(localPort: number): string {
  const hex = `:${localPort.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n")) {
    const cols = line.trim().split(/\s+/);
    if (cols[1]?.endsWith(hex) && cols[7]) return cols[7];
  }
  return "?";
}

async function runOnce(traced: boolean, runArgs: string[] = []): Promise<{ said: string[]; dialer: string }> {
  let dialer = "";
  const upstream = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket: Socket) {
        dialer = socketOwner(socket.remotePort);
      },
      data() {},
    },
  });
  const argv = ["python3", join(ROOT, "tests/agent/fixtures/drop-privileges.py"), String(await freePort()), String(upstream.port)];
  const proc = Bun.spawn(traced ? [BUN, MAIN, "run", "--no-publish", ...runArgs, "--", ...argv] : argv, {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const decoder = new TextDecoder();
  const reader = proc.stdout.getReader();
  while (!out.includes("dialed")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += decoder.decode(value, { stream: true });
  }
  // The owner is read while the program's connection is open.
  const deadline = Date.now() + 10_000;
  while (!dialer && Date.now() < deadline) await Bun.sleep(20);
  proc.stdin.write("\n");
  proc.stdin.end();
  await proc.exited;
  upstream.stop(true);
  return {
    said: out
      .trim()
      .split("\n")
      .map((line) => line.replace(/port \d+$/, "port N")),
    dialer,
  };
}

const expected: string[] = [
  "root binds a SO_REUSEPORT port: ok",
  "nobody binds port 80: errno 13",
  "nobody joins root's SO_REUSEPORT port: errno 98",
  "nobody binds a free port: ok",
  "nobody dialed from port N",
];

test.skipIf(process.getuid?.() !== 0)(
  "as root, a program that dropped to nobody binds and dials with nobody's rights, as untraced",
  async () => {
    const direct = await runOnce(false);
    // Low ports need CAP_NET_BIND_SERVICE only below ip_unprivileged_port_start (containers may set it to 0).
    const lowest = Number(readFileSync("/proc/sys/net/ipv4/ip_unprivileged_port_start", "utf8"));
    const said = [...expected];
    if (lowest <= 80) said[1] = "nobody binds port 80: ok";
    expect(direct).toEqual({ said, dialer: NOBODY });
    expect(await runOnce(true)).toEqual(direct);
    // Relay threads make more sockets on each address: they are made with the program's rights too.
    expect(await runOnce(true, ["--relay-threads", "2"])).toEqual(direct);
  },
  60_000,
);
