import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { descendants, describeProcess } from "~/agent/lifecycle/processes.ts";
import { openRunLog, pruneRunLogs } from "~/agent/lifecycle/run-log.ts";
import { runLogDirs } from "~/lib/server/env.ts";
import { scratchDir } from "../harness.ts";

describe("the background supervisor's log", () => {
  test("goes in the first directory that is the user's own and private; a symlink or another user's directory is passed over", () => {
    const scratch = scratchDir("tapscope-runlog-");
    try {
      const uid = process.getuid!();
      const link = join(scratch.dir, "link");
      symlinkSync(join(scratch.dir, "elsewhere"), link);
      mkdirSync(join(scratch.dir, "elsewhere"));
      const theirs = join(scratch.dir, "theirs");
      mkdirSync(theirs, { mode: 0o777 });
      chmodSync(theirs, 0o777);
      // As root the test can make a directory someone else owns; otherwise it is left out.
      const other = uid === 0 ? 65534 : uid;
      if (uid === 0) chownSync(theirs, other, other);
      const open = join(scratch.dir, "open");
      mkdirSync(open, { mode: 0o755 });
      chmodSync(open, 0o755);
      const log = openRunLog(uid === 0 ? [link, theirs, open] : [link, open], 4242, uid);
      expect(log?.path).toBe(join(open, "run-4242.log"));
      writeFileSync(log!.fd, "hello\n");
      expect(readFileSync(log!.path, "utf8")).toBe("hello\n");
      expect(statSync(open).mode & 0o777).toBe(0o700);
      expect(statSync(log!.path).mode & 0o777).toBe(0o600);
      // A directory that does not exist yet is made private.
      const fresh = openRunLog([join(scratch.dir, "a/b/tapscope")], 7, uid);
      expect(statSync(join(scratch.dir, "a/b/tapscope")).mode & 0o777).toBe(0o700);
      expect(fresh?.path).toEndWith("a/b/tapscope/run-7.log");
    } finally {
      scratch.cleanup();
    }
  });

  test("logs of ended runs go after a week, or beyond the newest 50; a running supervisor's log stays however old", () => {
    const scratch = scratchDir("tapscope-runlog-prune-");
    try {
      const now = Date.now();
      const write = (name: string, ageDays: number) => {
        const path = join(scratch.dir, name);
        writeFileSync(path, "x\n");
        const at = (now - ageDays * 24 * 3600_000) / 1000;
        utimesSync(path, at, at);
        return path;
      };
      // Pids above any pid_max: runs that have ended.
      const old = write("run-999999001.log", 8);
      const recent = write("run-999999002.log", 1);
      const running = write(`run-${process.pid}.log`, 30);
      const other = write("notes.txt", 30);
      const many = Array.from({ length: 55 }, (_, i) => write(`run-${999999100 + i}.log`, 2 + i / 100));
      pruneRunLogs(scratch.dir, now);
      expect([old, recent, running, other].map(existsSync)).toEqual([false, true, true, true]);
      // The newest 50 ended runs stay (recent and 49 of the 55), the 6 oldest go.
      expect(many.filter(existsSync).length).toBe(49);
      expect(many.slice(-6).some(existsSync)).toBe(false);
    } finally {
      scratch.cleanup();
    }
  });

  test("where: the runtime directory, then the state directory (or ~/.local/state), then one of the user's own in the temp directory", () => {
    expect(runLogDirs({ XDG_RUNTIME_DIR: "/run/user/1000", HOME: "/home/ann" }, 1000)).toEqual([
      "/run/user/1000/tapscope",
      "/home/ann/.local/state/tapscope",
      expect.stringMatching(/\/tapscope-1000$/),
    ]);
    expect(runLogDirs({ XDG_STATE_HOME: "/var/state", XDG_RUNTIME_DIR: "relative" }, 5)).toEqual([
      "/var/state/tapscope",
      expect.stringMatching(/\/tapscope-5$/),
    ]);
  });
});

describe("the processes a run traces", () => {
  function fakeProc(entries: Array<{ pid: number; ppid: number; name: string; state?: string; argv: string[] }>) {
    const scratch = scratchDir("tapscope-proc-");
    for (const e of entries) {
      mkdirSync(join(scratch.dir, String(e.pid)));
      writeFileSync(join(scratch.dir, String(e.pid), "stat"), `${e.pid} (${e.name}) ${e.state ?? "S"} ${e.ppid} 1 1 0 -1`);
      writeFileSync(join(scratch.dir, String(e.pid), "cmdline"), `${e.argv.join("\0")}\0`);
    }
    mkdirSync(join(scratch.dir, "self"));
    return scratch;
  }

  test("every living descendant, whatever its depth, zombies and strangers left out; names with spaces and parentheses read right", () => {
    const proc = fakeProc([
      { pid: 10, ppid: 1, name: "tapscope", argv: ["tapscope", "__supervise"] },
      { pid: 11, ppid: 10, name: "nginx", argv: ["nginx: master process nginx"] },
      { pid: 12, ppid: 11, name: "nginx", argv: ["nginx: worker process"] },
      { pid: 13, ppid: 11, name: "nginx", state: "Z", argv: [] },
      { pid: 14, ppid: 12, name: "odd (name) x", argv: ["odd", "--db-password=hunter2"] },
      { pid: 20, ppid: 1, name: "other", argv: ["other"] },
    ]);
    try {
      const found = descendants(10, proc.dir);
      expect(found.map((p) => [p.pid, p.ppid, p.name])).toEqual([
        [11, 10, "nginx"],
        [12, 11, "nginx"],
        [14, 12, "odd (name) x"],
      ]);
      // Command lines are redacted as on events: they are printed and logged.
      expect(found[2]!.commandLine).toBe("odd --db-password=[redacted]");
      expect(describeProcess(found[0]!)).toBe("nginx (pid 11: nginx: master process nginx)");
      expect(describeProcess({ pid: 3, ppid: 1, name: "sleep", commandLine: "sleep" })).toBe("sleep (pid 3)");
    } finally {
      proc.cleanup();
    }
  });
});
