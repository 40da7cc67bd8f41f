import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Subprocess, spawn } from "bun";
import { TunnelClient } from "~/agent/query-client.ts";
import { eventFields, type TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent } from "../support/event-factory.ts";
import { type ServerProcess, seedNamespaceToken, spawnServer } from "../support/server-process.ts";

/**
 * `tapscope tail` as a person runs it, against the real server CLI: the filter applied by the server, both output
 * formats, a restart of the server it rides out, Ctrl-C, and a bad filter shown with its position.
 */
const root = join(import.meta.dir, "../..");
let server: ServerProcess;
let seeded: { namespaceId: string; token: string };
let dataDir = "";

type Tail = { proc: Subprocess<"ignore", "pipe", "pipe">; stdout: () => string; stderr: () => string };

function startTail(args: string[]): Tail {
  const proc = spawn([process.execPath, "src/main.ts", "tail", ...args], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      TAPSCOPE_TOKEN: seeded.token,
      TAPSCOPE_ENDPOINT: server.endpoint,
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = { stdout: "", stderr: "" };
  const collect = async (stream: ReadableStream<Uint8Array>, key: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    const reader = stream.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) out[key] += decoder.decode(chunk.value);
  };
  void collect(proc.stdout, "stdout");
  void collect(proc.stderr, "stderr");
  return { proc, stdout: () => out.stdout, stderr: () => out.stderr };
}

/** Events into the namespace through an INSERT tunnel: ingest, then the live hub, as a publisher's would go. */
async function insert(events: TracedEvent[]): Promise<void> {
  const client = await TunnelClient.open({ endpoint: server.endpoint, token: seeded.token, role: "INSERT" });
  try {
    await client.query({ kind: "insert", events });
  } finally {
    client.close();
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/** Inserts a failing and a good request until tail has printed a failing one: the socket is then surely following. */
async function untilFollowing(tail: Tail, marker: string): Promise<{ failing: TracedEvent[]; good: TracedEvent[] }> {
  const failing: TracedEvent[] = [];
  const good: TracedEvent[] = [];
  const deadline = Date.now() + 30_000;
  while (!tail.stdout().includes(marker)) {
    if (Date.now() > deadline) throw new Error(`tail printed nothing: ${tail.stderr()}`);
    const bad = tracedEvent({ http_req_path: `/${marker}/${failing.length}`, http_resp_status_code: 502 });
    const ok = tracedEvent({ http_req_path: `/fine/${good.length}`, http_resp_status_code: 200 });
    failing.push(bad);
    good.push(ok);
    await insert([ok, bad]);
    await Bun.sleep(200);
  }
  return { failing, good };
}

beforeAll(async () => {
  const first = await spawnServer({ keepDataDir: true });
  dataDir = first.dataDir;
  await first.kill();
  seeded = await seedNamespaceToken(dataDir, "tail");
  server = await spawnServer({ dataDir, keepDataDir: true });
}, 90_000);

afterAll(async () => {
  await server?.kill();
});

describe("tapscope tail", () => {
  test("--filter 'response.status >= 500' prints the failing requests and not the others, as JSON lines when piped", async () => {
    const tail = startTail(["--filter", "response.status >= 500"]);
    try {
      const { good } = await untilFollowing(tail, "json-failing");
      const lines = tail
        .stdout()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line.http_resp_status_code).toBeGreaterThanOrEqual(500);
      expect(lines[0].time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      // Each line holds what a query's rows show, as the field table lists them.
      expect(Object.keys(lines[0])).toEqual([...eventFields.rowColumns]);
      const printed = tail.stdout();
      for (const e of good) expect(printed).not.toContain(e.event_id);
    } finally {
      tail.proc.kill("SIGINT");
      expect(await tail.proc.exited).toBe(0);
    }
  }, 60_000);

  test("--format line prints run --log's lines; Ctrl-C ends it cleanly", async () => {
    const tail = startTail(["--format", "line", "--filter", 'request.url contains "/line-failing/"']);
    await untilFollowing(tail, "line-failing");
    expect(tail.stdout()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} {2}502 GET {2}\/line-failing\/\d+/m);
    // Not a terminal: no colour codes.
    expect(tail.stdout()).not.toContain("\x1b[");
    tail.proc.kill("SIGINT");
    expect(await tail.proc.exited).toBe(0);
    expect(tail.stderr()).toBe("");
  }, 60_000);

  test("on a terminal (a pseudo-terminal, through script) the lines are in colour, as run --log's are", async () => {
    const command = `${process.execPath} src/main.ts tail --filter 'request.url contains "/tty-failing/"'`;
    const proc = spawn(["script", "-qfec", command, "/dev/null"], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        TAPSCOPE_TOKEN: seeded.token,
        TAPSCOPE_ENDPOINT: server.endpoint,
      },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = { stdout: "", stderr: "" };
    const reader = proc.stdout.getReader();
    void (async () => {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) out.stdout += new TextDecoder().decode(chunk.value);
    })();
    const tail: Tail = { proc: proc as unknown as Tail["proc"], stdout: () => out.stdout, stderr: () => out.stderr };
    try {
      await untilFollowing(tail, "tty-failing");
      // The status in red (5xx), as formatLogLine paints it.
      expect(out.stdout).toContain("\x1b[31m502\x1b[0m GET  /tty-failing/");
    } finally {
      proc.kill("SIGKILL");
      await proc.exited;
    }
  }, 60_000);

  test("a server restart: tail says it lost the server, reconnects, says so, and goes on", async () => {
    const tail = startTail(["--filter", "response.status >= 500", "--format", "line"]);
    try {
      await untilFollowing(tail, "before-restart");
      const port = server.port;
      await server.kill();
      await until(() => tail.stderr().includes("lost the connection"), "the lost connection notice");
      expect(tail.stderr()).toContain("reconnecting");
      server = await spawnServer({ dataDir, keepDataDir: true, port });
      await until(() => tail.stderr().includes("reconnected"), "the reconnected notice", 40_000);
      await untilFollowing(tail, "after-restart");
      expect(tail.proc.exitCode).toBeNull();
    } finally {
      tail.proc.kill("SIGINT");
      await tail.proc.exited;
    }
  }, 120_000);

  test("a traced handler that hangs: a pending line while the client waits, once, then the aborted line (both formats)", async () => {
    const filter = 'request.url contains "tail-pending"';
    const lines = startTail(["--format", "line", "--filter", filter]);
    const json = startTail(["--format", "json", "--filter", filter]);
    const program = spawn([process.execPath, "src/main.ts", "run", "--", "python3", join(root, "tests/agent/fixtures/hang-server.py")], {
      cwd: root,
      env: { ...process.env, TAPSCOPE_TOKEN: seeded.token, TAPSCOPE_ENDPOINT: server.endpoint },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const run = { stdout: "", stderr: "" };
    const collect = async (stream: ReadableStream<Uint8Array>, key: "stdout" | "stderr") => {
      const decoder = new TextDecoder();
      const reader = stream.getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) run[key] += decoder.decode(chunk.value);
    };
    void collect(program.stdout, "stdout");
    void collect(program.stderr, "stderr");
    try {
      await untilFollowing(lines, "tail-pending-ready");
      await untilFollowing(json, "tail-pending-ready");
      // Notices are sent only while the run is connected: wait for it to say where its requests go.
      await until(
        () => /port \d+/.test(run.stdout) && run.stderr.includes("sending requests to"),
        `the run to join: ${run.stderr}`,
        40_000,
      );
      const port = Number(/port (\d+)/.exec(run.stdout)![1]);

      const curl = spawn(["curl", "-s", "--max-time", "6", `http://127.0.0.1:${port}/hang/tail-pending`], {
        stdout: "ignore",
        stderr: "ignore",
      });
      const pendingLine = /^\d\d:\d\d:\d\d\.\d{3} {2}··· GET {2}\/hang\/tail-pending +pending$/m;
      await until(() => pendingLine.test(lines.stdout()), `the pending line: ${lines.stderr()}`);
      await until(() => json.stdout().includes('"pending":true'), "the pending record");
      expect(curl.exitCode).toBeNull();

      // Answered while the other waits, and started after it: printed as usual, without a pending line.
      expect(await (await fetch(`http://127.0.0.1:${port}/ok/tail-pending`)).text()).toBe("ok");
      await until(() => / 200 GET {2}\/ok\/tail-pending /.test(lines.stdout()), "the /ok line");

      expect(await curl.exited).toBe(28);
      await until(() => /--- GET {2}\/hang\/tail-pending +\S+ {2}unanswered: client aborted/.test(lines.stdout()), "the aborted line");
      await until(() => json.stdout().includes('"http_unanswered":"client_aborted"'), "the aborted record");
      expect(lines.stdout().match(/··· GET/g)).toHaveLength(1);

      const records = json
        .stdout()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
        .filter((r) => String(r.http_req_path).includes("/tail-pending"));
      const pending = records.filter((r) => r.pending === true);
      expect(pending).toHaveLength(1);
      expect(pending[0]).toMatchObject({ http_req_method: "GET", http_req_path: "/hang/tail-pending", http_is_outgoing: false });
      expect(pending[0].time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      // The event that ends it has the same id, and is the usual record.
      const ended = records.find((r) => r.event_id === pending[0].event_id && r.pending === undefined);
      expect(ended).toMatchObject({ http_unanswered: "client_aborted", http_resp_status_code: 0 });
      expect(Object.keys(ended)).toEqual([...eventFields.rowColumns]);
      expect(records.filter((r) => r.http_req_path === "/ok/tail-pending").map((r) => r.pending)).toEqual([undefined]);
    } finally {
      program.kill("SIGTERM");
      lines.proc.kill("SIGINT");
      json.proc.kill("SIGINT");
      await Promise.all([program.exited, lines.proc.exited, json.proc.exited]);
    }
  }, 90_000);

  test("a bad filter is printed with its position, and nothing is followed", async () => {
    const tail = startTail(["--filter", "response.status >= 500 && request.url contain '/x'"]);
    expect(await tail.proc.exited).toBe(2);
    const err = tail.stderr();
    expect(err).toContain("tapscope tail: bad filter:");
    const [, expression, caret] = err.split("\n");
    expect(expression).toBe("  response.status >= 500 && request.url contain '/x'");
    expect(caret?.indexOf("^")).toBe(2 + "response.status >= 500 && request.url ".length);
  }, 30_000);

  test("a token the server does not know is refused with a sentence", async () => {
    const proc = spawn([process.execPath, "src/main.ts", "tail"], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", TAPSCOPE_TOKEN: `tsk_${"A".repeat(43)}`, TAPSCOPE_ENDPOINT: server.endpoint },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(1);
    expect(await new Response(proc.stderr).text()).toContain("refused TAPSCOPE_TOKEN");
  }, 30_000);
});
