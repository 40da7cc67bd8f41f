import { describe, expect, test } from "bun:test";
import { start } from "../agent/harness.ts";

/** The program behaves the same with and without tracing: argv, env, stdio, exit status, signals. */
async function both(argv: string[], options: { env?: Record<string, string>; stdin?: string } = {}) {
  const direct = start(argv, { ...options, traced: false });
  const traced = start(argv, options);
  return {
    direct: { code: await direct.exited, stdout: direct.stdout(), stderr: direct.stderr() },
    traced: { code: await traced.exited, stdout: traced.stdout(), stderr: traced.stderr() },
  };
}

describe("tapscope run: the program runs as if started directly", () => {
  test("exit codes pass through", async () => {
    const { direct, traced } = await both(["sh", "-c", "exit 7"]);
    expect(direct.code).toBe(7);
    expect(traced.code).toBe(7);
  });

  test("a death by signal is reported as a shell does (128 + n)", async () => {
    const { direct, traced } = await both(["sh", "-c", "kill -TERM $$"]);
    expect(direct.code).toBe(143);
    expect(traced.code).toBe(143);
    const segv = await both(["sh", "-c", "kill -SEGV $$"]);
    expect(segv.traced.code).toBe(139);
  });

  test("argv, environment and working directory are the program's own", async () => {
    const script = "import sys, os, json; print(json.dumps([sys.argv, os.environ.get('TS_TEST_VAR'), os.getcwd()]))";
    const { direct, traced } = await both(["python3", "-c", script, "a b", "", "ü", "--", "-x"], {
      env: { TS_TEST_VAR: "x y=z" },
    });
    expect(direct.code).toBe(0);
    expect(traced.stdout).toBe(direct.stdout);
    expect(JSON.parse(traced.stdout)[0]).toEqual(["-c", "a b", "", "ü", "--", "-x"]);
    expect(JSON.parse(traced.stdout)[1]).toBe("x y=z");
  });

  test("the program never sees tapscope's credentials (TAPSCOPE_TOKEN, TAPSCOPE_LINK_ID) unless --pass-credentials", async () => {
    const env = { TAPSCOPE_TOKEN: "tsk_secret_namespace_token", TAPSCOPE_LINK_ID: "link-123", TS_TEST_VAR: "kept" };
    const script = [
      'echo "token=$(printenv TAPSCOPE_TOKEN || echo unset) link=$(printenv TAPSCOPE_LINK_ID || echo unset) var=$TS_TEST_VAR"',
      'env | grep -c -E "^TAPSCOPE_(TOKEN|LINK_ID)=" || true',
    ].join("; ");
    const traced = start(["sh", "-c", script], { env });
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe("token=unset link=unset var=kept\n0\n");
    const nested = start(["sh", "-c", script], { env, runArgs: ["--pass-credentials"] });
    expect(await nested.exited).toBe(0);
    expect(nested.stdout()).toBe("token=tsk_secret_namespace_token link=link-123 var=kept\n2\n");
  });

  test("stdin, stdout and stderr are inherited", async () => {
    const { direct, traced } = await both(["sh", "-c", 'read x; echo "out:$x"; echo "err:$x" >&2; cat'], {
      stdin: "hello\nrest of input\n",
    });
    expect(traced.stdout).toBe(direct.stdout);
    expect(traced.stdout).toBe("out:hello\nrest of input\n");
    expect(traced.stderr).toContain("err:hello");
  });

  test("SIGPIPE has its default action in the program", async () => {
    const { direct, traced } = await both(["sh", "-c", "yes | head -n 2"]);
    expect(traced.stdout).toBe("y\ny\n");
    expect(traced.stderr).not.toContain("Broken pipe");
    expect(traced.code).toBe(direct.code);
  });

  test("SIGTERM sent to tapscope is forwarded to the program", async () => {
    const script = [
      "import signal, sys, time",
      "def on_term(n, f):",
      "    print('got TERM', flush=True); sys.exit(42)",
      "signal.signal(signal.SIGTERM, on_term)",
      "print('ready', flush=True)",
      "time.sleep(30)",
    ].join("\n");
    const traced = start(["python3", "-c", script]);
    await traced.waitForOutput("ready");
    traced.proc.kill("SIGTERM");
    expect(await traced.exited).toBe(42);
    expect(traced.stdout()).toContain("got TERM");
  });

  test("children (fork + exec) run and report as usual", async () => {
    const { direct, traced } = await both(["sh", "-c", "sh -c 'echo child $0' one; (exit 3); echo $?"]);
    expect(traced.stdout).toBe(direct.stdout);
    expect(traced.stdout).toBe("child one\n3\n");
  });

  test("a missing command fails like a shell: 127 and a clear message", async () => {
    const traced = start(["definitely-not-a-command-xyz"]);
    expect(await traced.exited).toBe(127);
    expect(traced.stderr()).toContain("definitely-not-a-command-xyz: command not found");
  });

  test("bad options are refused with usage", async () => {
    const traced = start(["true"], { runArgs: ["--redact", "nope"] });
    expect(await traced.exited).toBe(2);
    expect(traced.stderr()).toContain("--redact must be redact, hash or keep");
  });
});
