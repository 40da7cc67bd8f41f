import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort } from "../support/ports.ts";
import { isRoot, sh, tempDir } from "./support.ts";

/**
 * The compiled `tapscope` binary, built here with `npm run build` (x64 and arm64): it runs, serves the
 * API and pages from its embedded PGlite, migrations and browser assets, uses DuckDB from the binary,
 * installs itself through /install.sh, and stops cleanly. Slow (a build): TAPSCOPE_SKIP_BINARY_TEST=1 skips it.
 */

const skip = process.env.TAPSCOPE_SKIP_BINARY_TEST === "1";
const root = resolve(import.meta.dir, "../..");
const dist = join(root, "dist");
const hostArch = process.arch === "arm64" ? "arm64" : "x64";
const BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const VERSION_LINE =
  /^tapscope (\d+\.\d+\.\d+\S*) \(commit ([0-9a-f]{12}(?:-dirty)?), (linux-(?:x64|arm64)), built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$/;

type Running = { url: string; proc: Bun.Subprocess<"ignore", "pipe", "pipe">; log: () => string; dataDir: string };

/** Starts `<binary> server` on a free port with a fresh DATA_DIR; resolves once it logs that it listens. */
async function startBinaryServer(
  binary: string,
  env: Record<string, string> = {},
  prefix: string[] = [],
  startMs = 120_000,
): Promise<Running> {
  const dataDir = tempDir("bin-data");
  const home = tempDir("bin-home"); // its ~/.cache gets the 70 MB libduckdb.so
  bulky.push(dataDir, home);
  const port = await freePort();
  const proc = Bun.spawn([...prefix, binary, "server"], {
    env: { PATH: BASE_PATH, HOME: home, DATA_DIR: dataDir, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ...env },
    cwd: dataDir,
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    const reader = stream.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const deadline = Date.now() + startMs;
  while (Date.now() < deadline) {
    if (text.includes('"msg":"tapscope server listening"')) {
      return { url: `http://127.0.0.1:${port}`, proc, log: () => text, dataDir };
    }
    if (proc.exitCode !== null) break;
    await Bun.sleep(50);
  }
  proc.kill("SIGKILL");
  throw new Error(`the binary server did not start:\n${text}`);
}

/** Collects a stream's text in the background; `until` waits (bounded) for a pattern to appear in it. */
function collect(stream: ReadableStream<Uint8Array>) {
  let text = "";
  void (async () => {
    const decoder = new TextDecoder();
    const reader = stream.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
  })();
  return {
    text: () => text,
    until: async (pattern: RegExp, ms = 20_000) => {
      const deadline = Date.now() + ms;
      while (!pattern.test(text) && Date.now() < deadline) await Bun.sleep(50);
      return pattern.exec(text);
    },
  };
}

/** Asks for a magic link (logged without SMTP), follows it and reads the session back: writes and reads the metadata DB. */
async function signInRoundTrip(server: Running, email: string) {
  const asked = await fetch(`${server.url}/api/EmailLogin`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: server.url },
    body: JSON.stringify({ email }),
  });
  expect(asked.status).toBe(200);
  const browser = asked.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const link = new RegExp(`magic link for ${email}: (\\S+?)"`).exec(server.log())?.[1];
  expect(link).toStartWith(`${server.url}/login/link?token=`);
  // The page the link opens signs in with this POST, from the browser that asked.
  const finished = await fetch(`${server.url}/api/FinishEmailLogin`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: server.url, cookie: browser },
    body: JSON.stringify({ token: new URL(link as string).searchParams.get("token") }),
  });
  expect(await finished.clone().json()).toMatchObject({ signedIn: true });
  const cookie = finished.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const self = await fetch(`${server.url}/api/GetSelf`, { headers: { cookie } });
  expect(self.status).toBe(200);
  expect(await self.json()).toMatchObject({ email, isLoggedIn: true });
}

function elfMachine(path: string): number {
  const fd = openSync(path, "r");
  const header = Buffer.alloc(20);
  readSync(fd, header, 0, 20, 0);
  closeSync(fd);
  expect(header.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
  return header.readUInt16LE(18);
}

/** Folders holding copies of the 150 MB binary: removed after the file, so runs do not fill the disk. */
const bulky: string[] = [];

function bulkyDir(prefix: string): string {
  const dir = tempDir(prefix);
  bulky.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of bulky) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(skip)("compiled binary", () => {
  let buildSeconds = 0;

  beforeAll(async () => {
    const started = performance.now();
    const build = Bun.spawnSync(["npm", "run", "build"], { cwd: root, stdout: "pipe", stderr: "pipe" });
    buildSeconds = (performance.now() - started) / 1000;
    if (build.exitCode !== 0) throw new Error(`npm run build failed:\n${build.stderr}\n${build.stdout}`);
    console.log(`npm run build: ${buildSeconds.toFixed(1)} s`);
  }, 600_000);

  test("npm run build writes both binaries, each for its CPU", () => {
    const x64 = join(dist, "tapscope-linux-x64");
    const arm64 = join(dist, "tapscope-linux-arm64");
    expect(elfMachine(x64)).toBe(0x3e); // EM_X86_64
    expect(elfMachine(arm64)).toBe(0xb7); // EM_AARCH64
    expect(statSync(join(dist, "tapscope")).ino).toBe(statSync(join(dist, `tapscope-linux-${hostArch}`)).ino);
    for (const file of [x64, arm64]) {
      const size = statSync(file).size;
      console.log(`${file.slice(root.length + 1)}: ${(size / 1024 / 1024).toFixed(1)} MiB`);
      expect(size).toBeGreaterThan(100 * 1024 * 1024); // Bun itself + DuckDB + PGlite
      expect(statSync(file).mode & 0o111).toBe(0o111);
    }
    expect(readdirSync(dist).filter((name) => name.endsWith(".map"))).toEqual([]);
  });

  test("tapscope version names the version, the commit it was built from and the target", async () => {
    const ran = await sh(`${join(dist, "tapscope")} version`, { env: { PATH: BASE_PATH } });
    expect(ran.code).toBe(0);
    const match = VERSION_LINE.exec(ran.stdout.trim());
    expect(match).not.toBeNull();
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    expect(match?.[1]).toBe(pkg.version);
    // Built from this checkout: HEAD or (when others commit meanwhile) one of its ancestors.
    const commit = match?.[2]?.slice(0, 12) ?? "";
    expect(Bun.spawnSync(["git", "merge-base", "--is-ancestor", commit, "HEAD"], { cwd: root }).exitCode).toBe(0);
    expect(match?.[3]).toBe(`linux-${hostArch}`);
  });

  describe("tapscope server", () => {
    let server: Running;

    beforeAll(async () => {
      server = await startBinaryServer(join(dist, "tapscope"));
    }, 180_000);

    afterAll(() => {
      if (server && server.proc.exitCode === null) server.proc.kill("SIGKILL");
    });

    test("serves /api/health from an embedded, migrated PGlite", async () => {
      const res = await fetch(`${server.url}/api/health`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ ok: true });
      expect(server.log()).toContain('"database":"pglite"');
      expect(existsSync(join(server.dataDir, "pglite", "PG_VERSION"))).toBe(true);
    });

    test("the event store is DuckDB, loaded from the binary", () => {
      expect(server.log()).toContain('"eventStore":"duckdb"');
      expect(existsSync(join(server.dataDir, "events.duckdb"))).toBe(true);
    });

    test("the metadata database works: e-mail sign-in round trip", async () => {
      await signInRoundTrip(server, "binary-test@example.com");
    });

    test("renders a page whose script and stylesheet come from the binary, compressed", async () => {
      const res = await fetch(`${server.url}/login`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/html");
      const html = await res.text();
      const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
      expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
      expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
      for (const asset of assets) {
        const file = await fetch(`${server.url}${asset}`);
        expect(file.status).toBe(200);
        const name = asset.slice("/assets/".length);
        expect(Buffer.from(await file.arrayBuffer()).equals(readFileSync(join(root, "build/client", name)))).toBe(true);
      }
      // The page and its script go out compressed (fetch asks for brotli and decodes it above).
      expect(res.headers.get("content-encoding")).toBe("br");
      const script = assets.find((a) => a.startsWith("/assets/entry-client-"))!;
      const raw = await fetch(`${server.url}${script}`, { headers: { "accept-encoding": "br" }, decompress: false });
      expect(raw.headers.get("content-encoding")).toBe("br");
      const name = script.slice("/assets/".length);
      expect(Buffer.from(await raw.arrayBuffer()).equals(readFileSync(join(root, "build/client", `${name}.br`)))).toBe(true);
    });

    test("offers itself and the other architecture's binary for download", async () => {
      for (const arch of ["x64", "arm64"]) {
        const res = await fetch(`${server.url}/download/tapscope-linux-${arch}`);
        expect(res.status).toBe(200);
        expect(Number(res.headers.get("content-length"))).toBe(statSync(join(dist, `tapscope-linux-${arch}`)).size);
        await res.body?.cancel();
      }
    });

    test("curl | sh installs this very binary, which then runs", async () => {
      const home = tempDir("bin-install");
      bulky.push(home);
      const asUser = isRoot && Bun.which("setpriv") ? 65534 : undefined;
      if (asUser) chownSync(home, asUser, asUser);
      const ran = await sh(`curl -fsSL ${server.url}/install.sh | sh`, { env: { HOME: home, PATH: BASE_PATH }, asUser, cwd: home });
      expect(ran.stderr).toBe("");
      expect(ran.code).toBe(0);
      const installed = join(home, ".local/bin/tapscope");
      const version = await sh(`${installed} version`, { env: { PATH: BASE_PATH } });
      expect(version.stdout.trim()).toMatch(VERSION_LINE);
      expect(ran.stdout).toContain(`Installed ${version.stdout.trim()}`);
      expect(ran.stdout).toContain("run -- <your command>");
      expect(statSync(installed).size).toBe(statSync(join(dist, "tapscope")).size);
    }, 60_000);

    test("tapscope run keeps a program's stdio and exit code", async () => {
      const ran = await sh(`${join(dist, "tapscope")} run -- sh -c 'echo out; echo err >&2; exit 7'`, {
        env: { PATH: BASE_PATH, HOME: tempDir("run-home"), TAPSCOPE_ENDPOINT: server.url },
      });
      expect(ran.code).toBe(7);
      expect(ran.stdout).toBe("out\n");
      expect(ran.stderr).toContain("err\n");
    }, 60_000);

    test.skipIf(!Bun.which("python3"))(
      "a request to a program under tapscope run shows up live on its shared link (binary CLI -> binary server)",
      async () => {
        const port = await freePort();
        const proc = Bun.spawn([join(dist, "tapscope"), "run", "--", "python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"], {
          env: { PATH: BASE_PATH, HOME: tempDir("run-home"), TAPSCOPE_ENDPOINT: server.url },
          cwd: tempDir("run-cwd"),
          stdout: "pipe",
          stderr: "pipe",
        });
        const stderr = collect(proc.stderr);
        const readUntil = (pattern: RegExp) => stderr.until(pattern);
        let ws: WebSocket | undefined;
        try {
          const linkId = (await readUntil(/\/link\/([\w-]+)/))?.[1];
          expect(linkId).toBeDefined();
          expect(await readUntil(new RegExp(`intercepted 127\\.0\\.0\\.1:${port}`))).not.toBeNull();

          const events: Array<Record<string, unknown>> = [];
          const socket = new WebSocket(`${server.url.replace("http", "ws")}/api/LiveSubscribe?link_id=${linkId}`);
          ws = socket;
          socket.onmessage = (m) => {
            const msg = JSON.parse(String(m.data)) as { type: string; events?: Array<Record<string, unknown>> };
            if (msg.type === "events" || msg.type === "history") events.push(...(msg.events ?? []));
          };
          await new Promise((resolve, reject) => {
            socket.onopen = resolve;
            socket.onerror = reject;
          });
          socket.send(JSON.stringify({ type: "setConfig", revision: 1, filters: [] }));

          let status = 0;
          for (let i = 0; i < 100 && status !== 200; i++) {
            status = await fetch(`http://127.0.0.1:${port}/?from=binary-test`).then(
              (r) => r.status,
              () => 0,
            );
            if (status !== 200) await Bun.sleep(100);
          }
          expect(status).toBe(200);
          const deadline = Date.now() + 15_000;
          while (!events.some((e) => String(e.http_req_path).includes("from=binary-test")) && Date.now() < deadline) await Bun.sleep(100);
          const event = events.find((e) => String(e.http_req_path).includes("from=binary-test"));
          expect(event).toMatchObject({ http_req_method: "GET", http_resp_status_code: 200, http_is_outgoing: false });
        } finally {
          ws?.close();
          proc.kill("SIGINT");
          await Promise.race([proc.exited, Bun.sleep(10_000)]);
          if (proc.exitCode === null) proc.kill("SIGKILL");
        }
      },
      60_000,
    );

    test("tapscope proxy from the binary forwards and publishes what it forwards", async () => {
      const upstream = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("from upstream") });
      const port = await freePort();
      const proc = Bun.spawn([join(dist, "tapscope"), "proxy", "--listen", `127.0.0.1:${port}`, "--to", `127.0.0.1:${upstream.port}`], {
        env: { PATH: BASE_PATH, HOME: tempDir("proxy-home"), TAPSCOPE_ENDPOINT: server.url },
        stdout: "ignore",
        stderr: "pipe",
      });
      const stderr = collect(proc.stderr);
      let socket: WebSocket | undefined;
      try {
        const linkId = (await stderr.until(/\/link\/([\w-]+)/))?.[1];
        expect(linkId).toBeDefined();
        const events: Array<Record<string, unknown>> = [];
        socket = new WebSocket(`${server.url.replace("http", "ws")}/api/LiveSubscribe?link_id=${linkId}`);
        const ws = socket;
        ws.onmessage = (m) => {
          const msg = JSON.parse(String(m.data)) as { type: string; events?: Array<Record<string, unknown>> };
          if (msg.type === "events" || msg.type === "history") events.push(...(msg.events ?? []));
        };
        await new Promise((resolve, reject) => {
          ws.onopen = resolve;
          ws.onerror = reject;
        });
        ws.send(JSON.stringify({ type: "setConfig", revision: 1, filters: [] }));
        let body = "";
        for (let i = 0; i < 100 && body !== "from upstream"; i++) {
          body = await fetch(`http://127.0.0.1:${port}/via-proxy`).then(
            (r) => r.text(),
            () => "",
          );
          if (body !== "from upstream") await Bun.sleep(100);
        }
        expect(body).toBe("from upstream");
        const deadline = Date.now() + 15_000;
        while (!events.some((e) => e.http_req_path === "/via-proxy") && Date.now() < deadline) await Bun.sleep(100);
        expect(events.find((e) => e.http_req_path === "/via-proxy")).toMatchObject({ http_req_method: "GET", http_resp_status_code: 200 });
      } finally {
        socket?.close();
        proc.kill("SIGINT");
        await Promise.race([proc.exited, Bun.sleep(10_000)]);
        if (proc.exitCode === null) proc.kill("SIGKILL");
        upstream.stop(true);
      }
    }, 60_000);

    test("exits 0 on SIGTERM, even with a `tapscope run` publisher connected", async () => {
      const traced = Bun.spawn([join(dist, "tapscope"), "run", "--", "sleep", "60"], {
        env: { PATH: BASE_PATH, HOME: tempDir("run-home"), TAPSCOPE_ENDPOINT: server.url },
        stdout: "ignore",
        stderr: "pipe",
      });
      try {
        // The anonymous link box is printed once the CLI has joined the server.
        const said = collect(traced.stderr);
        expect(await said.until(/\/link\//)).not.toBeNull();
        expect(said.text()).toContain(`${server.url}/link/`);
        await Bun.sleep(500);
        const started = performance.now();
        server.proc.kill("SIGTERM");
        const code = await Promise.race([server.proc.exited, Bun.sleep(20_000).then(() => "timeout")]);
        expect(code).toBe(0);
        expect(performance.now() - started).toBeLessThan(10_000);
        expect(server.log()).toContain('"msg":"shutting down"');
      } finally {
        traced.kill("SIGKILL");
      }
    }, 60_000);
  });

  test("DuckDB loads from the binary; no .env is read from the working directory (a probe compiled the same way)", async () => {
    const out = tempDir("probe");
    bulky.push(out);
    const build = Bun.spawnSync(
      [
        "npm",
        "run",
        "build",
        "--",
        "--target",
        hostArch,
        "--skip-client",
        "--entry",
        join(import.meta.dir, "binary-probe.ts"),
        "--outdir",
        out,
      ],
      { cwd: root, stdout: "pipe", stderr: "pipe" },
    );
    expect(build.exitCode).toBe(0);
    // A user's project directory: the binary must not load its .env (it would change a traced program's environment).
    const cwd = tempDir("probe-cwd");
    await Bun.write(join(cwd, ".env"), "TAPSCOPE_PROBE=from-dotenv\n");
    await Bun.write(join(cwd, "bunfig.toml"), 'preload = ["./missing.ts"]\n');
    const ran = await sh(join(out, `tapscope-linux-${hostArch}`), { env: { PATH: BASE_PATH, HOME: bulkyDir("probe-home") }, cwd });
    expect(ran.stderr).toBe("");
    expect(ran.stdout.trim()).toBe("duckdb: 2 events, newest /b\ndotenv: not loaded");
  }, 120_000);

  test.skipIf(!existsSync("/usr/lib/postgresql") || !Bun.which("clickhouse-server"))(
    "tapscope server on PostgreSQL (migrations from the binary) and ClickHouse",
    async () => {
      const { createTestDatabase } = await import("../support/postgres.ts");
      const { clickhouseUrl } = await import("../support/clickhouse.ts");
      const [databaseUrl, chUrl] = await Promise.all([createTestDatabase(), clickhouseUrl()]);
      const server = await startBinaryServer(join(dist, "tapscope"), { DATABASE_URL: databaseUrl, CLICKHOUSE_URL: chUrl });
      try {
        expect(server.log()).toContain('"database":"postgres"');
        expect(server.log()).toContain('"eventStore":"clickhouse"');
        await signInRoundTrip(server, "binary-pg@example.com");
      } finally {
        server.proc.kill("SIGTERM");
        expect(await server.proc.exited).toBe(0);
      }
    },
    180_000,
  );

  const qemu = Bun.which("qemu-aarch64");
  const hasArm64Libc = existsSync("/lib/ld-linux-aarch64.so.1");
  test.skipIf(hostArch !== "x64" || !qemu || !hasArm64Libc)(
    "the arm64 binary runs (under qemu-user): version and a server with PGlite and pages",
    async () => {
      const arm64 = join(dist, "tapscope-linux-arm64");
      const ran = await sh(`${qemu} -L / ${arm64} version`, { env: { PATH: BASE_PATH } });
      expect(ran.code).toBe(0);
      expect(VERSION_LINE.exec(ran.stdout.trim())?.[3]).toBe("linux-arm64");
      // Emulated, on a busy 2-core machine, a first start (initdb, DuckDB) can take minutes.
      const server = await startBinaryServer(arm64, {}, [qemu as string, "-L", "/"], 300_000);
      try {
        expect((await (await fetch(`${server.url}/api/health`)).json()) as object).toMatchObject({ ok: true });
        expect(server.log()).toContain('"eventStore":"duckdb"'); // the arm64 libduckdb.so, from the binary
        expect((await fetch(`${server.url}/login`)).status).toBe(200);
      } finally {
        server.proc.kill("SIGTERM");
        expect(await server.proc.exited).toBe(0);
      }
    },
    420_000,
  );
});
