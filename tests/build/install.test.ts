import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fakeBinary, isRoot, restrictedPath, sh, startServer, tempDir } from "./support.ts";

/**
 * `curl -fsSL <server>/install.sh | sh` against the real server, serving stand-in binaries from
 * DOWNLOAD_DIR (the real compiled binary goes through the same path in binary.test.ts).
 */

const BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const FAKE_VERSION = "tapscope 9.9.9 (commit fake1234, linux-test)";
const hostArch = process.arch === "arm64" ? "arm64" : "x64";
const canSwitchUser = isRoot && Bun.which("setpriv") !== null;
/** A private mount namespace (root, and not refused by a container) lets the root install land in a scratch /usr/local/bin. */
const canUnshare = isRoot && Bun.which("unshare") !== null && Bun.spawnSync(["unshare", "-m", "true"]).exitCode === 0;

type Server = Awaited<ReturnType<typeof startServer>>;
let server: Server;
/** Has nothing to offer (nothing built). */
let empty: Server;
/** Offers a file that is not a runnable binary. */
let broken: Server;
let downloads: string;

beforeAll(async () => {
  downloads = tempDir("downloads");
  fakeBinary(downloads, "tapscope-linux-x64", FAKE_VERSION);
  fakeBinary(downloads, "tapscope-linux-arm64", FAKE_VERSION);
  const brokenDir = tempDir("broken");
  fakeBinary(brokenDir, `tapscope-linux-${hostArch}`, "", true);
  [server, empty, broken] = await Promise.all([
    startServer({ DOWNLOAD_DIR: downloads }),
    startServer({ DOWNLOAD_DIR: tempDir("empty") }),
    startServer({ DOWNLOAD_DIR: brokenDir }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([server?.stop(), empty?.stop(), broken?.stop()]);
});

/** A home directory the installing user owns (nobody when the tests run as root). */
function home(): string {
  const dir = tempDir("home");
  if (canSwitchUser) chownSync(dir, 65534, 65534);
  return dir;
}

function installAsUser(homeDir: string, extra: Record<string, string> = {}, url = server.url) {
  return sh(`curl -fsSL ${url}/install.sh | sh`, {
    env: { HOME: homeDir, PATH: BASE_PATH, ...extra },
    asUser: canSwitchUser ? 65534 : undefined,
    cwd: homeDir,
  });
}

describe("GET /install.sh", () => {
  test("is a POSIX sh script that knows this server", async () => {
    const res = await fetch(`${server.url}/install.sh`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/x-shellscript");
    const body = await res.text();
    expect(body.startsWith("#!/bin/sh\n")).toBe(true);
    expect(body).toContain(`TAPSCOPE_SERVER='${server.url}'`);
    expect(body.trimEnd().endsWith('main "$@"')).toBe(true);
    const file = join(tempDir("script"), "install.sh");
    writeFileSync(file, body);
    const syntax = await sh(`sh -n ${file}`, { env: { PATH: BASE_PATH } });
    expect(syntax).toMatchObject({ code: 0, stderr: "" });
  });
});

describe("curl | sh", () => {
  test("installs into ~/.local/bin as a normal user and tells the next command", async () => {
    const homeDir = home();
    const ran = await installAsUser(homeDir);
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    const installed = join(homeDir, ".local/bin/tapscope");
    expect(existsSync(installed)).toBe(true);
    expect(statSync(installed).mode & 0o111).toBe(0o111);
    const version = await sh(`${installed} version`, { env: { PATH: BASE_PATH } });
    expect(version.stdout.trim()).toBe(FAKE_VERSION);
    expect(ran.stdout).toContain(`Installed ${FAKE_VERSION}`);
    expect(ran.stdout).toContain(`Downloading tapscope for linux-${hostArch}`);
    // ~/.local/bin is not on PATH here: say how to add it, and give the next command with the full path.
    expect(ran.stdout).toContain(`export PATH="${homeDir}/.local/bin:$PATH"`);
    expect(ran.stdout).toContain(`${installed} run -- <your command>`);
    // The server is not the default endpoint, so the user is told to point the CLI at it.
    expect(ran.stdout).toContain(`export TAPSCOPE_ENDPOINT=${server.url}`);
    // No leftovers from the download.
    expect(
      Bun.spawnSync(["ls", "-A", join(homeDir, ".local/bin")])
        .stdout.toString()
        .trim(),
    ).toBe("tapscope");
  });

  test("with ~/.local/bin on PATH the next command is plain `tapscope run -- ...`; reinstalling replaces it", async () => {
    const homeDir = home();
    const env = { PATH: `${homeDir}/.local/bin:${BASE_PATH}` };
    expect((await installAsUser(homeDir, env)).code).toBe(0);
    const older = "tapscope 0.0.1 (commit 000000000000, linux-test)";
    fakeBinary(join(homeDir, ".local/bin"), "tapscope", older);
    if (canSwitchUser) chownSync(join(homeDir, ".local/bin/tapscope"), 65534, 65534);
    const again = await installAsUser(homeDir, env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`(replacing ${older})`);
    expect((await sh("tapscope version", { env })).stdout.trim()).toBe(FAKE_VERSION);
    expect(again.stdout).toContain("\n  tapscope run -- <your command>");
    expect(again.stdout).not.toContain("export PATH=");
  });

  test.skipIf(!canUnshare)("as root it installs into /usr/local/bin", async () => {
    // A private mount namespace with an empty /usr/local/bin: the real path, without touching the machine's.
    const homeDir = tempDir("roothome");
    const unshared = await sh(
      `unshare -m sh -c 'mount -t tmpfs tmpfs /usr/local/bin && curl -fsSL ${server.url}/install.sh | sh && stat -c %a /usr/local/bin/tapscope && /usr/local/bin/tapscope version'`,
      { env: { HOME: homeDir, PATH: BASE_PATH }, cwd: homeDir },
    );
    expect(unshared.stderr).toBe("");
    expect(unshared.code).toBe(0);
    expect(unshared.stdout).toContain("to /usr/local/bin/tapscope");
    expect(unshared.stdout).toContain("\n755\n");
    expect(unshared.stdout.trim().endsWith(FAKE_VERSION)).toBe(true);
    expect(unshared.stdout).toContain("tapscope run -- <your command>");
    expect(existsSync(join(homeDir, ".local/bin/tapscope"))).toBe(false);
  });

  test("TAPSCOPE_INSTALL_DIR picks the folder", async () => {
    const homeDir = home();
    const target = join(homeDir, "tools");
    const ran = await installAsUser(homeDir, { TAPSCOPE_INSTALL_DIR: target });
    expect(ran.code).toBe(0);
    expect(existsSync(join(target, "tapscope"))).toBe(true);
    expect(existsSync(join(homeDir, ".local/bin/tapscope"))).toBe(false);
  });

  test.skipIf(!Bun.which("wget"))("works with wget when there is no curl", async () => {
    const homeDir = home();
    const script = join(homeDir, "install.sh");
    writeFileSync(script, await (await fetch(`${server.url}/install.sh`)).text());
    chmodSync(script, 0o644);
    const path = restrictedPath(["sh", "uname", "id", "mkdir", "chmod", "mv", "rm", "ls", "wget", "cat", "sha256sum"]);
    const ran = await sh(`sh ${script}`, {
      env: { HOME: homeDir, PATH: path },
      asUser: canSwitchUser ? 65534 : undefined,
      cwd: homeDir,
    });
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    expect(readFileSync(join(homeDir, ".local/bin/tapscope"), "utf8")).toBe(
      readFileSync(join(downloads, `tapscope-linux-${hostArch}`), "utf8"),
    );
  });

  test("refuses other systems and architectures with a clear message", async () => {
    const homeDir = home();
    const fakeUname = (answer: string) => {
      const dir = tempDir("uname");
      writeFileSync(
        join(dir, "uname"),
        `#!/bin/sh\ncase "$1" in -s) echo ${answer.split(" ")[0]} ;; -m) echo ${answer.split(" ")[1]} ;; *) echo 6.1.0 ;; esac\n`,
      );
      chmodSync(join(dir, "uname"), 0o755);
      return `${dir}:${BASE_PATH}`;
    };
    const mac = await installAsUser(homeDir, { PATH: fakeUname("Darwin arm64") });
    expect(mac.code).not.toBe(0);
    expect(mac.stderr).toContain("On macOS, install it inside a Linux VM or container");
    const arm32 = await installAsUser(homeDir, { PATH: fakeUname("Linux armv7l") });
    expect(arm32.code).not.toBe(0);
    expect(arm32.stderr).toContain("no Tapscope build for the armv7l architecture");
    const arm64 = await installAsUser(homeDir, { PATH: fakeUname("Linux aarch64") });
    expect(arm64.stdout).toContain("Downloading tapscope for linux-arm64");
    expect(existsSync(join(homeDir, ".local/bin/tapscope"))).toBe(true);
  });

  test("a binary that does not run is not installed", async () => {
    const homeDir = home();
    const ran = await installAsUser(homeDir, {}, broken.url);
    expect(ran.code).not.toBe(0);
    expect(ran.stderr).toContain("the downloaded binary does not run on this machine: cannot execute binary file");
    expect(
      Bun.spawnSync(["ls", "-A", join(homeDir, ".local/bin")])
        .stdout.toString()
        .trim(),
    ).toBe("");
  });

  test("a binary that does not match the published SHA-256 is neither run nor installed", async () => {
    // A mirror (or anything on the way) that serves other bytes than the server's: install.sh and the
    // checksum come from the real server, the binary does not.
    const homeDir = home();
    const marker = join(tempDir("marker"), "ran");
    const tampered = `#!/bin/sh\ntouch ${marker}\necho "${FAKE_VERSION}"\n`;
    let mirrorUrl = "";
    const mirror = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req): Promise<Response> => {
        const path = new URL(req.url).pathname;
        if (path === "/install.sh") {
          return new Response((await (await fetch(`${server.url}/install.sh`)).text()).replaceAll(server.url, mirrorUrl));
        }
        if (path.endsWith(".sha256")) return fetch(`${server.url}${path}`);
        return new Response(tampered);
      },
    });
    mirrorUrl = `http://127.0.0.1:${mirror.port}`;
    try {
      const ran = await installAsUser(homeDir, {}, mirrorUrl);
      expect(ran.code).not.toBe(0);
      const want = createHash("sha256")
        .update(readFileSync(join(downloads, `tapscope-linux-${hostArch}`)))
        .digest("hex");
      const got = createHash("sha256").update(tampered).digest("hex");
      expect(ran.stderr).toContain(`checksum mismatch for ${mirrorUrl}/download/tapscope-linux-${hostArch}: expected ${want}, got ${got}`);
      expect(ran.stdout).not.toContain("Installed");
      expect(existsSync(marker)).toBe(false);
      expect(
        Bun.spawnSync(["ls", "-A", join(homeDir, ".local/bin")])
          .stdout.toString()
          .trim(),
      ).toBe("");
    } finally {
      await mirror.stop(true);
    }
  });

  test("a server without the binary makes the installer fail with the server's reason", async () => {
    const ran = await installAsUser(home(), {}, empty.url);
    expect(ran.code).not.toBe(0);
    expect(ran.stderr).toContain(`failed (HTTP 404): tapscope-linux-${hostArch} is not built on this server: run "npm run build"`);
  });
});

describe("GET /download/:file", () => {
  test("streams the binary byte for byte", async () => {
    for (const arch of ["x64", "arm64"]) {
      const res = await fetch(`${server.url}/download/tapscope-linux-${arch}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/octet-stream");
      const want = readFileSync(join(downloads, `tapscope-linux-${arch}`));
      expect(res.headers.get("content-length")).toBe(String(want.length));
      expect(Buffer.from(await res.arrayBuffer()).equals(want)).toBe(true);
    }
  });

  test("publishes each binary's SHA-256 in sha256sum format", async () => {
    for (const arch of ["x64", "arm64"]) {
      const res = await fetch(`${server.url}/download/tapscope-linux-${arch}.sha256`);
      expect(res.status).toBe(200);
      const want = createHash("sha256")
        .update(readFileSync(join(downloads, `tapscope-linux-${arch}`)))
        .digest("hex");
      expect(await res.text()).toBe(`${want}  tapscope-linux-${arch}\n`);
    }
    const missing = await fetch(`${empty.url}/download/tapscope-linux-x64.sha256`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toContain("tapscope-linux-x64 is not built on this server");
  });

  test("404 with a JSON reason when that binary is not built", async () => {
    const res = await fetch(`${empty.url}/download/tapscope-linux-arm64`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(((await res.json()) as { error: string }).error).toContain(
      'tapscope-linux-arm64 is not built on this server: run "npm run build"',
    );
  });

  test("without DOWNLOAD_DIR a server run from source offers what npm run build left in dist/", async () => {
    const fromSource = await startServer();
    try {
      for (const arch of ["x64", "arm64"]) {
        const built = join(import.meta.dir, "../../dist", `tapscope-linux-${arch}`);
        const res = await fetch(`${fromSource.url}/download/tapscope-linux-${arch}`);
        if (existsSync(built)) {
          expect(res.status).toBe(200);
          expect(res.headers.get("content-length")).toBe(String(statSync(built).size));
          await res.body?.cancel();
        } else {
          expect(res.status).toBe(404);
        }
      }
    } finally {
      await fromSource.stop();
    }
  }, 30_000);

  test("unknown names and path tricks are 404, never a file read", async () => {
    for (const name of [
      "tapscope-darwin-arm64",
      "..%2F..%2Fetc%2Fpasswd",
      "tapscope-linux-x64.map",
      "%2Fetc%2Fpasswd",
      ".sha256",
      "%2Fetc%2Fpasswd.sha256",
    ]) {
      const res = await fetch(`${server.url}/download/${name}`);
      expect(res.status).toBe(404);
      const body = (await res.json()) as { error: string };
      expect(body.error).not.toContain("root:");
    }
  });
});
