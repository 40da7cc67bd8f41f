import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { Socket, Subprocess, TCPSocketListener } from "bun";
import { descendants } from "~/agent/lifecycle/processes.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { freePort } from "../../support/ports.ts";
import { startServer, type TestServer } from "../../support/publish-server.ts";
import { BUN, hasCommand, MAIN, ROOT, scratchDir, waitForPort, waitUntil } from "../harness.ts";

/**
 * Programs that daemonize or put themselves in the background, under `tapscope run`, publishing to a real server:
 * the command returns as it does untraced, the program keeps answering on its addresses, its requests are published
 * with its own process fields, its own stop command (or pid file) stops it, and then nothing is left: the background
 * supervisor exits with the last traced process.
 */
let server: TestServer;
/** A plain HTTP upstream; for each connection, the uid owning the client's socket (who dialed it). */
let upstream: { port: number; dialers: string[]; stop(): void };
const scratch = scratchDir("tapscope-daemon-");
const isRoot = process.getuid?.() === 0;
/** nginx lives in /usr/sbin, which a user's PATH may leave out. */
const nginx = Bun.which("nginx") ?? (existsSync("/usr/sbin/nginx") ? "/usr/sbin/nginx" : null);

/**
 * The uid owning the connection from local port `localPort` to the upstream's `upstreamPort`: matched on both ends, since
 * another socket (a relay's leg, a connection in TIME_WAIT, which /proc shows as root's) may have the same local port.
 */
function socketOwner(localPort: number, upstreamPort: number): string {
  const port = (p: number) => `:${p.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(port(localPort)) && cols[2]?.endsWith(port(upstreamPort)) && cols[7]) return cols[7];
    }
  }
  return "?";
}

function startUpstream(): typeof upstream {
  const dialers: string[] = [];
  const listener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket: Socket) {
        dialers.push(socketOwner(socket.remotePort, listener.port));
      },
      data(socket: Socket) {
        socket.end("HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nfrom upstream");
      },
    },
  });
  return { port: listener.port, dialers, stop: () => listener.stop(true) };
}

beforeAll(async () => {
  server = await startServer();
  upstream = startUpstream();
  // nginx workers run as nobody: they must be able to read what is here.
  chmodSync(scratch.dir, 0o755);
}, 30_000);

afterAll(async () => {
  upstream?.stop();
  await server?.stop();
  scratch.cleanup();
});

/** Gone, or a zombie nobody reaped yet (this machine's pid 1 may never reap). */
function isGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

function readPid(file: string): number {
  try {
    return Number(readFileSync(file, "utf8").trim()) || 0;
  } catch {
    return 0;
  }
}

type Traced = {
  /** The front's exit code: what the shell gets. */
  code: number;
  stderr(): string;
  /** The background supervisor's pid, as the front printed it. */
  supervisorPid: number;
  logPath: string;
};

/** `tapscope run -- argv`, publishing to the test server; resolves when the command has returned. */
async function runDaemon(argv: string[], runArgs: string[] = []): Promise<Traced> {
  const proc = Bun.spawn([BUN, MAIN, "run", ...runArgs, "--", ...argv], {
    cwd: scratch.dir,
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: { ...process.env, TAPSCOPE_ENDPOINT: server.endpoint, TAPSCOPE_TOKEN: "", XDG_RUNTIME_DIR: scratch.dir },
  });
  const stderr = collect(proc);
  const code = await proc.exited;
  const said = await waitUntil(
    () => /Its messages go on in (\S+)/.exec(stderr()) && stderr(),
    5000,
    `the hand-over message; stderr: ${stderr()}`,
  );
  const supervisorPid = Number(/in the background \(pid (\d+)\)/.exec(said)?.[1]);
  const logPath = /Its messages go on in (\S+)/.exec(said)![1]!;
  // The program let its stderr go as it daemonized; the background tapscope must too, or `$(tapscope run ...)` hangs.
  await waitUntil(() => stderr.isEnded(), 10_000, "the command's stderr to end");
  return { code, stderr, supervisorPid, logPath };
}

type Collected = (() => string) & { isEnded(): boolean };

function collect(proc: Subprocess<"ignore", "ignore" | "pipe", "pipe">): Collected {
  let text = "";
  let isEnded = false;
  const decoder = new TextDecoder();
  const reader = proc.stderr.getReader();
  (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  })()
    .catch(() => {})
    .finally(() => {
      isEnded = true;
    });
  return Object.assign(() => text, { isEnded: () => isEnded });
}

function eventsTo(port: number): TracedEvent[] {
  return server.events().filter((e) => e.http_server_addr.endsWith(`:${port}`));
}

/** The supervisor and every process it traces now. */
function everything(run: Traced): number[] {
  return [run.supervisorPid, ...descendants(run.supervisorPid).map((p) => p.pid)];
}

/** No such process, not even a zombie. */
function isReaped(pid: number): boolean {
  return !existsSync(`/proc/${pid}`);
}

/**
 * After the program's own stop: `all` (read before it) are gone, and the log says why. The supervisor's own exit may
 * leave a zombie for its new parent to reap; what it adopted, it reaps itself before it exits.
 */
async function expectNothingLeft(run: Traced, all: number[]): Promise<void> {
  await waitUntil(() => all.every(isGone), 15_000, `processes ${all.filter((p) => !isGone(p)).join(", ")} to exit`);
  expect(all.slice(1).filter((pid) => !isReaped(pid))).toEqual([]);
  const log = readFileSync(run.logPath, "utf8");
  expect(log).toContain("tracing in the background");
  expect(log).toContain("the last traced process exited; tapscope exits");
  expect(statSync(run.logPath).mode & 0o777).toBe(0o600);
}

/** The supervisor `tapscope run` started (its one child), while the front runs. */
function supervisorOf(front: number): number {
  try {
    return Number(readFileSync(`/proc/${front}/task/${front}/children`, "utf8").trim().split(" ")[0]) || 0;
  } catch {
    return 0;
  }
}

/** Whatever a failed test left: the run's processes, and the daemon named by its pid file. */
function killAll(run: Traced | null, pidFile: string): void {
  const daemon = readPid(pidFile);
  for (const pid of [...(run ? everything(run) : []), daemon, ...(daemon ? descendants(daemon).map((p) => p.pid) : [])]) {
    if (pid > 0 && !isGone(pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }
}

describe("tapscope run: programs that daemonize keep working and stay traced", () => {
  test.skipIf(!nginx)(
    "nginx in its default daemon mode: master and workers serve and proxy, workers' requests published as theirs, nginx -s stop ends it all",
    async () => {
      const port = await freePort();
      const dir = scratch.dir;
      const conf = join(dir, "nginx.conf");
      writeFileSync(
        conf,
        [
          "worker_processes 2;",
          `pid ${dir}/nginx.pid;`,
          `error_log ${dir}/nginx-error.log;`,
          "events { worker_connections 64; }",
          "http {",
          "  access_log off;",
          ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${dir}/nginx-${t};`),
          "  server {",
          `    listen 127.0.0.1:${port};`,
          '    location / { return 200 "hello from nginx\\n"; }',
          `    location /up/ { proxy_pass http://127.0.0.1:${upstream.port}/; }`,
          "  }",
          "}",
        ].join("\n"),
      );
      let run: Traced | null = null;
      try {
        run = await runDaemon([nginx!, "-e", join(dir, "nginx-error.log"), "-c", conf]);
        expect(run.code).toBe(0);
        // The master is listed first; its workers too, unless it had not forked them yet.
        expect(run.stderr()).toMatch(
          /nginx exited with 0 and left \d+ process(es)? running: nginx \(pid \d+: nginx: master process \S*nginx -e /,
        );
        expect(run.stderr()).toContain(`${server.endpoint}/link/`);
        const master = await waitUntil(() => readPid(join(dir, "nginx.pid")), 5000, "nginx's pid file");
        const workers = await waitUntil(() => {
          const list = descendants(master).map((p) => p.pid);
          return list.length === 2 && list;
        }, 10_000);

        expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe("hello from nginx\n");
        const dialsBefore = upstream.dialers.length;
        expect(await (await fetch(`http://127.0.0.1:${port}/up/via-worker`)).text()).toBe("from upstream");
        // The worker dialed the upstream as itself (nobody), not as the supervisor's root.
        if (isRoot) expect(upstream.dialers.slice(dialsBefore)).toEqual([String(Bun.spawnSync(["id", "-u", "nobody"]).stdout).trim()]);

        const published = await waitUntil(() => {
          const inbound = eventsTo(port).filter((e) => e.http_req_path === "/up/via-worker");
          const outbound = eventsTo(upstream.port).filter((e) => e.http_req_path === "/via-worker");
          return inbound.length > 0 && outbound.length > 0 && [...inbound, ...outbound];
        }, 15_000);
        for (const e of published) {
          expect(workers).toContain(e.process_id);
          expect(e.process_executable_name).toBe("nginx");
          expect(e.process_command_line).toBe("nginx: worker process");
          if (isRoot) expect(e.process_user).toBe("nobody");
        }

        const all = everything(run);
        expect(all).toEqual(expect.arrayContaining([master, ...workers]));
        expect(spawnSync(nginx!, ["-e", join(dir, "nginx-error.log"), "-c", conf, "-s", "stop"]).status).toBe(0);
        await expectNothingLeft(run, all);
        // The address is free again, as after nginx stops untraced.
        expect(
          await fetch(`http://127.0.0.1:${port}/`).then(
            () => "answered",
            () => "refused",
          ),
        ).toBe("refused");
      } finally {
        killAll(run, join(dir, "nginx.pid"));
      }
    },
    60_000,
  );

  test.skipIf(!hasCommand("redis-server") || !hasCommand("redis-cli"))(
    "redis-server --daemonize yes: answers redis-cli, its connections published, redis-cli shutdown ends it all",
    async () => {
      const port = await freePort();
      const pidFile = join(scratch.dir, "redis.pid");
      let run: Traced | null = null;
      const cli = (...args: string[]) => spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" });
      try {
        run = await runDaemon([
          "redis-server",
          "--daemonize",
          "yes",
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--pidfile",
          pidFile,
          "--dir",
          scratch.dir,
          "--logfile",
          join(scratch.dir, "redis.log"),
          "--save",
          "",
          "--appendonly",
          "no",
        ]);
        expect(run.code).toBe(0);
        expect(run.stderr()).toMatch(/redis-server exited with 0 and left 1 process running: redis-server \(pid \d+/);
        const redis = await waitUntil(() => readPid(pidFile), 5000, "redis's pid file");
        expect(cli("set", "daemon", "traced").stdout.trim()).toBe("OK");
        expect(cli("get", "daemon").stdout.trim()).toBe("traced");
        // Each command redis-server received is a database call, with redis-server's own process fields.
        const published = await waitUntil(() => eventsTo(port).some((e) => e.db_operation === "GET") && eventsTo(port), 15_000);
        expect(published.map((e) => e.db_operation)).toEqual(expect.arrayContaining(["SET", "GET"]));
        for (const e of published) {
          expect(e.protocol).toBe("db");
          expect(e.db_system).toBe("redis");
          expect(e.process_id).toBe(redis);
          // Debian's redis-server is a link to the one redis binary: /proc names the file itself.
          expect(e.process_executable_name).toBe(basename(realpathSync(Bun.which("redis-server")!)));
          expect(e.bytes_sent).toBeGreaterThan(0);
        }
        const all = everything(run);
        expect(all).toContain(redis);
        cli("shutdown", "nosave");
        await expectNothingLeft(run, all);
        expect(cli("ping").stdout.trim()).not.toBe("PONG");
      } finally {
        killAll(run, pidFile);
      }
    },
    60_000,
  );

  test("a shell script that starts a Node server with & and returns: the server answers and calls out, traced, until killed by its pid file", async () => {
    const port = await freePort();
    const pidFile = join(scratch.dir, "node.pid");
    const script = join(scratch.dir, "start.sh");
    writeFileSync(
      script,
      `#!/bin/sh\nnode ${join(ROOT, "tests/agent/fixtures/node-server.mjs")} ${port} >/dev/null 2>&1 &\necho $! > ${pidFile}\necho started\n`,
    );
    chmodSync(script, 0o755);
    let run: Traced | null = null;
    try {
      run = await runDaemon([script]);
      expect(run.code).toBe(0);
      expect(run.stderr()).toMatch(/start\.sh exited with 0 and left 1 process running: node \(pid \d+/);
      const node = readPid(pidFile);
      await waitForPort(port);
      expect(await (await fetch(`http://127.0.0.1:${port}/hello`)).text()).toBe("hello from node");
      const call = await fetch(`http://127.0.0.1:${port}/call?to=${encodeURIComponent(`http://127.0.0.1:${upstream.port}/from-node`)}`);
      expect(await call.text()).toBe("called: from upstream");
      const [hello, caller, outbound] = await waitUntil(() => {
        const h = eventsTo(port).find((e) => e.http_req_path === "/hello");
        const c = eventsTo(port).find((e) => e.http_req_path.startsWith("/call"));
        const o = eventsTo(upstream.port).find((e) => e.http_req_path === "/from-node");
        return h && c && o && [h, c, o];
      }, 15_000);
      for (const e of [hello!, caller!, outbound!]) {
        expect(e.process_id).toBe(node);
        expect(e.process_executable_name).toBe("node");
        expect(e.process_command_line).toContain("node-server.mjs");
      }
      expect(outbound!.parent_event_id).toBe(caller!.event_id);
      const all = everything(run);
      expect(all).toContain(node);
      process.kill(node, "SIGTERM");
      await expectNothingLeft(run, all);
    } finally {
      killAll(run, pidFile);
    }
  }, 60_000);

  test("a double-forking C daemon built here: same exit as untraced, answers with the real client's address, traced; kill <pid> ends it all", async () => {
    const binary = join(scratch.dir, "double-fork");
    const cc = spawnSync("gcc", ["-O2", "-o", binary, join(ROOT, "tests/agent/fixtures/double-fork.c")], { encoding: "utf8" });
    expect(cc.stderr).toBe("");
    const port = await freePort();
    const pidFile = join(scratch.dir, "double-fork.pid");
    // Untraced first: the command returns 0 at once and its daemon serves.
    const direct = spawnSync(binary, [String(port), pidFile]);
    expect(direct.status).toBe(0);
    const untraced = await waitUntil(() => readPid(pidFile), 5000, "the untraced daemon's pid file");
    await waitForPort(port);
    process.kill(untraced, "SIGKILL");
    await waitUntil(() => isGone(untraced), 5000, "the untraced daemon to exit");
    writeFileSync(pidFile, "");

    let run: Traced | null = null;
    try {
      run = await runDaemon([binary, String(port), pidFile]);
      expect(run.code).toBe(direct.status!);
      expect(run.stderr()).toMatch(/double-fork exited with 0 and left 1 process running: double-fork \(pid \d+/);
      const daemon = await waitUntil(() => readPid(pidFile), 5000, "the daemon's pid file");
      await waitForPort(port);
      const answer = await (await fetch(`http://127.0.0.1:${port}/who`)).text();
      expect(answer).toMatch(new RegExp(`^daemon ${daemon} answers 127\\.0\\.0\\.1:\\d+\\n$`));
      const [event] = await waitUntil(() => {
        const list = eventsTo(port).filter((e) => e.http_req_path === "/who");
        return list.length > 0 && list;
      }, 15_000);
      expect(event!.process_id).toBe(daemon);
      expect(event!.process_executable_name).toBe("double-fork");
      // What the daemon saw as its client is the client's real address, not the relay's.
      expect(answer.trim().endsWith(event!.http_client_addr)).toBe(true);
      const all = everything(run);
      expect(all).toContain(daemon);
      process.kill(daemon, "SIGTERM");
      await expectNothingLeft(run, all);
    } finally {
      killAll(run, pidFile);
    }
  }, 60_000);

  /** The C daemon, compiled once for the tests that only need some daemon. */
  function doubleFork(): string {
    const binary = join(scratch.dir, "double-fork");
    if (!Bun.file(binary).size) spawnSync("gcc", ["-O2", "-o", binary, join(ROOT, "tests/agent/fixtures/double-fork.c")]);
    return binary;
  }

  test("`kill <pid>` of the background tapscope, as its message says, stops what it traces, then itself", async () => {
    const port = await freePort();
    const pidFile = join(scratch.dir, "stop-me.pid");
    let run: Traced | null = null;
    try {
      run = await runDaemon([doubleFork(), String(port), pidFile]);
      expect(run.stderr()).toContain(`\`kill ${run.supervisorPid}\` stops them all`);
      await waitForPort(port);
      const all = everything(run);
      expect(all.length).toBe(2);
      process.kill(run.supervisorPid, "SIGTERM");
      await expectNothingLeft(run, all);
      expect(readFileSync(run.logPath, "utf8")).toContain("SIGTERM: stopping the 1 traced process (SIGTERM)");
    } finally {
      killAll(run, pidFile);
    }
  }, 60_000);

  test("--wait: tapscope stays in the foreground while the daemon runs, traced; SIGTERM (as SIGINT) to it stops the daemon and returns the program's code", async () => {
    const port = await freePort();
    const pidFile = join(scratch.dir, "wait.pid");
    const proc = Bun.spawn([BUN, MAIN, "run", "--wait", "--", doubleFork(), String(port), pidFile], {
      cwd: scratch.dir,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
      env: { ...process.env, TAPSCOPE_ENDPOINT: server.endpoint, TAPSCOPE_TOKEN: "" },
    });
    const stderr = collect(proc);
    const supervisorPid = await waitUntil(() => supervisorOf(proc.pid), 10_000, "the supervisor");
    try {
      await waitUntil(
        () => stderr().includes("--wait: tapscope traces them and waits until the last of them exits"),
        10_000,
        "the --wait message",
      );
      expect(stderr()).toMatch(/double-fork exited with 0 and left 1 process running/);
      const daemon = await waitUntil(() => readPid(pidFile), 5000, "the daemon's pid file");
      await waitForPort(port);
      expect(await (await fetch(`http://127.0.0.1:${port}/waiting`)).text()).toStartWith(`daemon ${daemon} answers`);
      await waitUntil(() => eventsTo(port).some((e) => e.http_req_path === "/waiting" && e.process_id === daemon), 15_000);
      expect(proc.exitCode).toBeNull();
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
      expect(stderr()).toContain("SIGTERM: stopping the 1 traced process (SIGTERM)");
      expect(isGone(daemon)).toBe(true);
    } finally {
      killAll({ code: 0, stderr, supervisorPid, logPath: "" }, pidFile);
      proc.kill("SIGKILL");
    }
  }, 60_000);

  test("--wait, then `tapscope run` killed: what the program left is not cut off, tapscope carries on in the background", async () => {
    const port = await freePort();
    const pidFile = join(scratch.dir, "orphaned-wait.pid");
    const proc = Bun.spawn([BUN, MAIN, "run", "--wait", "--", doubleFork(), String(port), pidFile], {
      cwd: scratch.dir,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
      env: { ...process.env, TAPSCOPE_ENDPOINT: server.endpoint, TAPSCOPE_TOKEN: "", XDG_RUNTIME_DIR: scratch.dir },
    });
    const stderr = collect(proc);
    const supervisorPid = await waitUntil(() => supervisorOf(proc.pid), 10_000, "the supervisor");
    let run: Traced = { code: 0, stderr, supervisorPid, logPath: "" };
    try {
      await waitUntil(() => stderr().includes("--wait: tapscope traces them"), 10_000, "the --wait message");
      proc.kill("SIGKILL");
      const said = await waitUntil(() => /Its messages go on in (\S+)/.exec(stderr()) && stderr(), 10_000, "the background message");
      expect(said).toContain("tapscope run was ended; what the program left stays traced");
      expect(Number(/in the background \(pid (\d+)\)/.exec(said)?.[1])).toBe(supervisorPid);
      run = { code: 137, stderr, supervisorPid, logPath: /Its messages go on in (\S+)/.exec(said)![1]! };
      const daemon = await waitUntil(() => readPid(pidFile), 5000, "the daemon's pid file");
      await waitForPort(port);
      expect(await (await fetch(`http://127.0.0.1:${port}/still-here`)).text()).toStartWith(`daemon ${daemon} answers`);
      await waitUntil(() => eventsTo(port).some((e) => e.http_req_path === "/still-here"), 15_000);
      const all = everything(run);
      expect(all).toContain(daemon);
      process.kill(daemon, "SIGTERM");
      await expectNothingLeft(run, all);
    } finally {
      killAll(run, pidFile);
    }
  }, 60_000);
});
