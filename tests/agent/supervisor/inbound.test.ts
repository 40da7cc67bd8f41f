import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { freePort } from "../../support/ports.ts";
import { hasCommand, ROOT, type Running, rawExchange, scratchDir, start, waitForPort } from "../harness.ts";

/** Real servers under `tapscope run`: each serves as usual and every request it served is an event. */
const fixtures = join(ROOT, "tests/agent/fixtures");
const scratch = scratchDir();
const running: Running[] = [];
afterAll(async () => {
  await Promise.all(running.map((r) => r.stop().catch(() => 0)));
  scratch.cleanup();
});

function track(r: Running): Running {
  running.push(r);
  return r;
}

const inbound = (e: TracedEvent) => e.protocol === "http" && !e.http_is_outgoing;

function expectEvent(events: TracedEvent[], method: string, path: string, status: number, port: number): TracedEvent {
  const match = events.find((e) => e.http_req_method === method && e.http_req_path === path);
  expect(match).toBeDefined();
  expect(match!.http_resp_status_code).toBe(status);
  expect(match!.http_server_addr).toBe(`127.0.0.1:${port}`);
  expect(match!.http_client_addr).toMatch(/^127\.0\.0\.1:\d+$/);
  return match!;
}

describe("inbound: real servers traced", () => {
  test("python3 http.server", async () => {
    const port = await freePort();
    writeFileSync(join(scratch.dir, "file.txt"), "a file served by python\n");
    const r = track(start(["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", scratch.dir]));
    await waitForPort(port);
    expect(r.stderr()).toContain(`tapscope: intercepted 127.0.0.1:${port}`);
    const res = await fetch(`http://127.0.0.1:${port}/file.txt?x=1`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("a file served by python\n");
    expect((await fetch(`http://127.0.0.1:${port}/missing`)).status).toBe(404);
    const events = await r.waitForEvents(2, inbound);
    const ok = expectEvent(events, "GET", "/file.txt?x=1", 200, port);
    expect(ok.http_resp_body_size_bytes_wire).toBe(24);
    expectEvent(events, "GET", "/missing", 404, port);
  });

  test("a Node http server: keep-alive, pipelining, chunked, a 10 MiB body", async () => {
    const port = await freePort();
    const r = track(start(["node", join(fixtures, "node-server.mjs"), String(port)]));
    await r.waitForOutput("listening");
    // Keep-alive: two requests over one connection (fetch reuses it).
    for (const q of ["a", "b"]) {
      const res = await fetch(`http://127.0.0.1:${port}/hello?q=${q}`);
      expect(await res.text()).toBe("hello from node");
    }
    // Pipelining: three requests written at once on one connection, answered in order.
    const pipelined = ["/hello?p=1", "/hello?p=2", "/hello?p=3"].map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join("");
    const answer = (await rawExchange(port, pipelined, 700)).toString();
    expect(answer.match(/HTTP\/1\.1 200 OK/g)?.length).toBe(3);
    // libuv accepts natively (no address asked); node's later getpeername/getsockname are answered for real.
    const who = await new Promise<{ reply: string; local: string }>((done, fail) => {
      const socket = connect(port, "127.0.0.1", () => {
        const local = `${socket.localAddress}:${socket.localPort}`;
        socket.write("GET /whoami HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let text = "";
        socket.on("data", (d) => {
          text += d;
        });
        socket.on("end", () => done({ reply: text.slice(text.indexOf("\r\n\r\n") + 4), local }));
      });
      socket.on("error", fail);
    });
    expect(who.reply).toBe(`${who.local} 127.0.0.1:${port}`);
    // Chunked response.
    const chunked = await fetch(`http://127.0.0.1:${port}/chunked`);
    expect(chunked.headers.get("transfer-encoding")).toBe("chunked");
    expect(await chunked.text()).toBe("part one, part two");
    // 10 MiB up and back, byte for byte.
    const big = new Uint8Array(10 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) crypto.getRandomValues(big.subarray(i, i + 4096));
    const sha = new Bun.CryptoHasher("sha256").update(big).digest("hex");
    const echoed = await fetch(`http://127.0.0.1:${port}/echo`, { method: "POST", body: big });
    expect(echoed.headers.get("x-sha256")).toBe(sha);
    const back = new Uint8Array(await echoed.arrayBuffer());
    expect(back.length).toBe(big.length);
    expect(new Bun.CryptoHasher("sha256").update(back).digest("hex")).toBe(sha);

    const events = await r.waitForEvents(8, inbound);
    expectEvent(events, "GET", "/hello?q=a", 200, port);
    expectEvent(events, "GET", "/hello?q=b", 200, port);
    for (const p of [1, 2, 3]) expectEvent(events, "GET", `/hello?p=${p}`, 200, port);
    const ch = expectEvent(events, "GET", "/chunked", 200, port);
    expect(ch.http_resp_transfer_encoding).toBe("chunked");
    const echo = expectEvent(events, "POST", "/echo", 200, port);
    expect(echo.http_req_body_size_bytes_wire).toBe(big.length);
    expect(echo.http_resp_body_size_bytes_wire).toBe(big.length);
    expect(echo.http_req_body_truncated).toBe(true);
  }, 60_000);

  test("an outbound call made while serving a request carries that request's event id as parent", async () => {
    const upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("upstream") });
    try {
      const port = await freePort();
      const r = track(start(["node", join(fixtures, "node-server.mjs"), String(port)]));
      await r.waitForOutput("listening");
      const target = encodeURIComponent(`http://127.0.0.1:${upstream.port}/inner`);
      expect(await (await fetch(`http://127.0.0.1:${port}/call?to=${target}`)).text()).toBe("called: upstream");
      const events = await r.waitForEvents(2, (e) => e.protocol === "http");
      const outer = expectEvent(events, "GET", `/call?to=${target}`, 200, port);
      const inner = events.find((e) => e.http_is_outgoing && e.http_req_path === "/inner");
      expect(inner).toBeDefined();
      expect(inner!.http_server_addr).toBe(`127.0.0.1:${upstream.port}`);
      expect(inner!.parent_event_id).toBe(outer.event_id);
      expect(inner!.process_id).toBe(outer.process_id);
    } finally {
      upstream.stop(true);
    }
  });

  test("a Bun server", async () => {
    const port = await freePort();
    const r = track(start([process.execPath, join(fixtures, "bun-server.ts"), String(port)]));
    await r.waitForOutput("listening");
    expect(await (await fetch(`http://127.0.0.1:${port}/hello`)).text()).toBe("hello from bun");
    const res = await fetch(`http://127.0.0.1:${port}/echo`, { method: "POST", body: "ping" });
    expect(await res.text()).toBe("ping");
    const events = await r.waitForEvents(2, inbound);
    expectEvent(events, "GET", "/hello", 200, port);
    const post = expectEvent(events, "POST", "/echo", 200, port);
    expect(Buffer.from(post.http_req_body, "base64").toString()).toBe("ping");
  });

  test("a static C server with blocking accept sees the real client address", async () => {
    const binary = join(scratch.dir, "c-server");
    const cc = spawnSync("gcc", ["-static", "-O2", "-o", binary, join(fixtures, "c-server.c")], { encoding: "utf8" });
    expect(cc.status, cc.stderr).toBe(0);
    const port = await freePort();
    const r = track(start([binary, String(port)]));
    await r.waitForOutput("listening");
    expect(r.stdout()).toContain(`listening 127.0.0.1:${port}`);
    const { body, local } = await new Promise<{ body: string; local: string }>((done, fail) => {
      const socket = connect(port, "127.0.0.1", () => {
        const local = `${socket.localAddress}:${socket.localPort}`;
        socket.write("GET /c?x=1 HTTP/1.1\r\nHost: c\r\n\r\n");
        let text = "";
        socket.on("data", (d) => {
          text += d;
        });
        socket.on("end", () => done({ body: text.slice(text.indexOf("\r\n\r\n") + 4), local }));
      });
      socket.on("error", fail);
    });
    expect(body).toBe(`accept=${local} getpeername=${local} getsockname=127.0.0.1:${port}`);
    const events = await r.waitForEvents(1, inbound);
    const e = expectEvent(events, "GET", "/c?x=1", 200, port);
    expect(e.http_client_addr).toBe(local);
  }, 30_000);

  test("a Java server (JDK HttpServer)", async () => {
    const classes = join(scratch.dir, "java");
    mkdirSync(classes, { recursive: true });
    if (hasCommand("javac")) {
      const javac = spawnSync("javac", ["-d", classes, join(fixtures, "JavaServer.java")], { encoding: "utf8" });
      expect(javac.status, javac.stderr).toBe(0);
    }
    const port = await freePort();
    const argv = hasCommand("javac")
      ? ["java", "-cp", classes, "JavaServer", String(port)]
      : ["java", join(fixtures, "JavaServer.java"), String(port)];
    const r = track(start(argv));
    await r.waitForOutput("listening", 30_000);
    const res = await fetch(`http://127.0.0.1:${port}/hello`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^hello from java, you are \/127\.0\.0\.1:\d+$/);
    const events = await r.waitForEvents(1, inbound);
    expectEvent(events, "GET", "/hello", 200, port);
  }, 60_000);

  test("a pre-forking Python server (fork after listen) serves from every worker", async () => {
    const port = await freePort();
    const r = track(start(["python3", join(fixtures, "prefork.py"), String(port)]));
    await r.waitForOutput("listening");
    const servedBy: number[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/w?i=${i}`, { keepalive: false, headers: { connection: "close" } });
      const text = await res.text();
      const m = /^worker (\d+) peer 127\.0\.0\.1:(\d+)$/.exec(text);
      expect(m).not.toBeNull();
      servedBy.push(Number(m![1]));
    }
    const events = await r.waitForEvents(12, inbound);
    // Each event names the worker process that accepted and served it, not the parent that bound.
    for (let i = 0; i < 12; i++) expect(expectEvent(events, "GET", `/w?i=${i}`, 200, port).process_id).toBe(servedBy[i]!);
    expect(await r.stop()).toBe(0);
  }, 30_000);
});

describe("inbound: addresses the program sees", () => {
  test("an ephemeral bind (port 0) reports its real, reachable port; getsockname/getpeername/accept are real", async () => {
    const r = track(start(["python3", join(fixtures, "addr.py"), "127.0.0.1"]));
    const out = await r.waitForOutput(/port \d+/);
    const port = Number(/port (\d+)/.exec(out)![1]);
    expect(out).toContain(`["127.0.0.1", ${port}]`);
    expect(r.stderr()).toContain(`intercepted 127.0.0.1:${port}`);
    const seen = await new Promise<{ reply: Record<string, [string, number]>; local: [string, number] }>((done, fail) => {
      const socket = connect(port, "127.0.0.1", () => {
        const local: [string, number] = [socket.localAddress!, socket.localPort!];
        socket.write("hi");
        let text = "";
        socket.on("data", (d) => {
          text += d;
        });
        socket.on("end", () => done({ reply: JSON.parse(text), local }));
      });
      socket.on("error", fail);
    });
    expect(seen.reply.accept).toEqual(seen.local);
    expect(seen.reply.getpeername).toEqual(seen.local);
    expect(seen.reply.getsockname).toEqual(["127.0.0.1", port]);
  });

  test("a dual-stack [::] listener: IPv4 clients appear v4-mapped, IPv6 clients as themselves", async () => {
    const r = track(start(["python3", join(fixtures, "addr.py"), "::"]));
    const out = await r.waitForOutput(/port \d+/);
    const port = Number(/port (\d+)/.exec(out)![1]);
    expect(r.stderr()).toContain(`intercepted [::]:${port}`);
    const ask = (host: string) =>
      new Promise<{ reply: Record<string, [string, number]>; local: [string, number] }>((done, fail) => {
        const socket = connect(port, host, () => {
          const local: [string, number] = [socket.localAddress!, socket.localPort!];
          socket.write("hi");
          let text = "";
          socket.on("data", (d) => {
            text += d;
          });
          socket.on("end", () => done({ reply: JSON.parse(text), local }));
        });
        socket.on("error", fail);
      });
    const v4 = await ask("127.0.0.1");
    expect(v4.reply.accept).toEqual([`::ffff:${v4.local[0]}`, v4.local[1]]);
    expect(v4.reply.getsockname).toEqual(["::ffff:127.0.0.1", port]);
    const v6 = await ask("::1");
    expect(v6.reply.accept).toEqual(["::1", v6.local[1]]);
    expect(v6.reply.getpeername).toEqual(["::1", v6.local[1]]);
    expect(v6.reply.getsockname).toEqual(["::1", port]);
  });

  test("binding an address already in use fails with EADDRINUSE, as without tracing", async () => {
    const blocker = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const script = `import socket\ns=socket.socket()\ntry:\n    s.bind(("127.0.0.1", ${blocker.port}))\n    print("bound")\nexcept OSError as e:\n    print("errno", e.errno)`;
    const traced = start(["python3", "-c", script]);
    const direct = start(["python3", "-c", script], { traced: false });
    await Promise.all([traced.exited, direct.exited]);
    blocker.stop(true);
    expect(direct.stdout()).toBe("errno 98\n");
    expect(traced.stdout()).toBe(direct.stdout());
  });
});

describe("inbound: listeners come and go", () => {
  test("closing a listener and binding its port again works, as without tracing", async () => {
    const port = await freePort();
    const script = [
      "import socket",
      "for round in range(3):",
      "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)",
      `    s.bind(("127.0.0.1", ${port}))`,
      "    s.listen()",
      "    c = socket.create_connection(('127.0.0.1', " + String(port) + "))",
      "    a, _ = s.accept(); c.sendall(b'x'); print(round, a.recv(1)); a.close(); c.close(); s.close()",
    ].join("\n");
    const traced = start(["python3", "-c", script]);
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe("0 b'x'\n1 b'x'\n2 b'x'\n");
    expect(traced.stderr().match(/intercepted/g)?.length).toBe(3);
  });

  test("a closed listener's port refuses connections again within a few seconds (the listener sweep)", async () => {
    const port = await freePort();
    const script = [
      "import socket, time",
      "s = socket.socket()",
      `s.bind(("127.0.0.1", ${port})); s.listen()`,
      "c = socket.create_connection(('127.0.0.1', " + String(port) + ")); a, _ = s.accept(); a.close(); c.close()",
      "s.close()",
      "deadline = time.time() + 8",
      "while True:",
      "    try:",
      "        socket.create_connection(('127.0.0.1', " + String(port) + "), timeout=1).close()",
      "    except ConnectionRefusedError:",
      "        print('refused'); break",
      "    if time.time() > deadline: print('still accepting'); break",
      "    time.sleep(0.2)",
    ].join("\n");
    const traced = start(["python3", "-c", script]);
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe("refused\n");
  }, 20_000);

  test("an SO_REUSEPORT group: two sockets on one port both serve", async () => {
    const port = await freePort();
    const script = [
      "import socket, selectors",
      "socks = []",
      "for i in range(2):",
      "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)",
      `    s.bind(("127.0.0.1", ${port})); s.listen(); socks.append(s)`,
      "print('ready', flush=True)",
      "sel = selectors.DefaultSelector()",
      "for i, s in enumerate(socks): sel.register(s, selectors.EVENT_READ, i)",
      "served = 0",
      "while served < 20:",
      "    for key, _ in sel.select():",
      "        c, _ = key.fileobj.accept(); c.recv(100); c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 1\\r\\nConnection: close\\r\\n\\r\\n%d' % key.data); c.close(); served += 1",
    ].join("\n");
    const r = start(["python3", "-c", script]);
    await r.waitForOutput("ready");
    const bodies = new Set<string>();
    for (let i = 0; i < 20; i++)
      bodies.add(await (await fetch(`http://127.0.0.1:${port}/r${i}`, { headers: { connection: "close" } })).text());
    expect(await r.exited).toBe(0);
    expect([...bodies].every((b) => b === "0" || b === "1")).toBe(true);
    expect(r.stderr().match(/intercepted 127\.0\.0\.1:\d+/g)?.length).toBe(2);
  });
});
