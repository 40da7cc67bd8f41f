import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { freePort } from "../../support/ports.ts";
import { start } from "../harness.ts";

/** Outbound calls made by traced programs go through the relay, arrive intact, and are events. */
let server: Server<undefined>;
let server6: Server<undefined> | null = null;
const seen: string[] = [];

beforeAll(() => {
  const fetchHandler = async (req: Request) => {
    const url = new URL(req.url);
    seen.push(`${req.method} ${url.pathname}${url.search}`);
    if (url.pathname === "/echo")
      return new Response(await req.arrayBuffer(), { headers: { "x-len": String(req.headers.get("content-length")) } });
    return new Response(`out ${url.search}`, { headers: { "content-type": "text/plain" } });
  };
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: fetchHandler });
  try {
    server6 = Bun.serve({ hostname: "::1", port: 0, fetch: fetchHandler });
  } catch {
    server6 = null;
  }
});
afterAll(() => {
  server.stop(true);
  server6?.stop(true);
});

const outbound = (e: TracedEvent) => e.protocol === "http" && e.http_is_outgoing;

function expectOutbound(events: TracedEvent[], method: string, path: string, status: number, serverAddr: string): TracedEvent {
  const match = events.find((e) => e.http_req_method === method && e.http_req_path === path);
  expect(match).toBeDefined();
  expect(match!.http_is_outgoing).toBe(true);
  expect(match!.http_resp_status_code).toBe(status);
  expect(match!.http_server_addr).toBe(serverAddr);
  return match!;
}

describe("outbound: real clients traced", () => {
  test("curl", async () => {
    const r = start(["curl", "-sS", `http://127.0.0.1:${server.port}/hello?by=curl`]);
    expect(await r.exited).toBe(0);
    expect(r.stdout()).toBe("out ?by=curl");
    const events = await r.waitForEvents(1, outbound);
    const e = expectOutbound(events, "GET", "/hello?by=curl", 200, `127.0.0.1:${server.port}`);
    expect(e.http_req_host).toBe(`127.0.0.1:${server.port}`);
    expect(e.timing_connect).toBeGreaterThanOrEqual(0);
  });

  test("python urllib, with a POST body", async () => {
    const script = `import urllib.request\nreq = urllib.request.Request("http://localhost:${server.port}/echo", data=b"x" * 100000, method="POST")\nprint(len(urllib.request.urlopen(req).read()))`;
    const r = start(["python3", "-c", script]);
    expect(await r.exited).toBe(0);
    expect(r.stdout().trim()).toBe("100000");
    const events = await r.waitForEvents(1, outbound);
    const e = expectOutbound(events, "POST", "/echo", 200, `127.0.0.1:${server.port}`);
    expect(e.http_req_body_size_bytes_wire).toBe(100000);
    expect(e.http_resp_body_size_bytes_wire).toBe(100000);
  });

  test("node fetch (non-blocking connect, keep-alive)", async () => {
    const script = `const a = await (await fetch("http://127.0.0.1:${server.port}/n?i=1")).text(); const b = await (await fetch("http://127.0.0.1:${server.port}/n?i=2")).text(); console.log(a, b);`;
    const r = start(["node", "--input-type=module", "-e", script]);
    expect(await r.exited).toBe(0);
    expect(r.stdout().trim()).toBe("out ?i=1 out ?i=2");
    const events = await r.waitForEvents(2, outbound);
    expectOutbound(events, "GET", "/n?i=1", 200, `127.0.0.1:${server.port}`);
    expectOutbound(events, "GET", "/n?i=2", 200, `127.0.0.1:${server.port}`);
  });

  test("IPv6 peers", async () => {
    if (!server6) throw new Error("this machine has no ::1; IPv6 cannot be tested here");
    const r = start(["curl", "-sS", "-g", `http://[::1]:${server6.port}/six`]);
    expect(await r.exited).toBe(0);
    expect(r.stdout()).toBe("out ");
    const events = await r.waitForEvents(1, outbound);
    expectOutbound(events, "GET", "/six", 200, `[::1]:${server6.port}`);
  });
});

describe("outbound: connect() semantics are the kernel's", () => {
  test("a closed port fails with ECONNREFUSED, blocking and non-blocking, as without tracing", async () => {
    const closed = await freePort();
    const script = [
      "import socket, errno",
      "s = socket.socket()",
      "try:",
      `    s.connect(("127.0.0.1", ${closed})); print("blocking connected")`,
      "except OSError as e:",
      "    print('blocking', errno.errorcode[e.errno])",
      "s = socket.socket(); s.setblocking(False)",
      `r = s.connect_ex(("127.0.0.1", ${closed}))`,
      "if r == errno.EINPROGRESS:",
      "    import select; select.select([], [s], [], 5); r = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)",
      "print('nonblocking', errno.errorcode.get(r, r))",
    ].join("\n");
    const direct = start(["python3", "-c", script], { traced: false });
    const traced = start(["python3", "-c", script]);
    await Promise.all([direct.exited, traced.exited]);
    expect(direct.stdout()).toBe("blocking ECONNREFUSED\nnonblocking ECONNREFUSED\n");
    expect(traced.stdout()).toBe(direct.stdout());
    expect(traced.events()).toEqual([]);
    const curl = start(["curl", "-sS", `http://127.0.0.1:${closed}/`]);
    expect(await curl.exited).toBe(7);
  });

  test("non-blocking connect: EINPROGRESS or success, SO_ERROR 0, then connected; getpeername is the real peer", async () => {
    const script = [
      "import socket, errno, select",
      "s = socket.socket(); s.setblocking(False)",
      `r = s.connect_ex(("127.0.0.1", ${server.port}))`,
      "print('first', 'ok' if r in (0, errno.EINPROGRESS) else errno.errorcode.get(r, r))",
      "select.select([], [s], [], 5)",
      "print('so_error', s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))",
      `r = s.connect_ex(("127.0.0.1", ${server.port}))`,
      "print('again', errno.errorcode.get(r, r))",
      "print('peer', s.getpeername())",
      "s.setblocking(True)",
      "s.sendall(b'GET /nb HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n')",
      "data = b''",
      "while True:",
      "    chunk = s.recv(65536)",
      "    if not chunk: break",
      "    data += chunk",
      "print('status', data.split(b'\\r\\n')[0].decode())",
    ].join("\n");
    const direct = start(["python3", "-c", script], { traced: false });
    const traced = start(["python3", "-c", script]);
    await Promise.all([direct.exited, traced.exited]);
    // CPython's connect_ex reports the kernel's EISCONN on a connected socket as 0.
    const expected = `first ok\nso_error 0\nagain 0\npeer ('127.0.0.1', ${server.port})\nstatus HTTP/1.1 200 OK\n`;
    expect(direct.stdout()).toBe(expected);
    expect(traced.stdout()).toBe(expected);
    const events = await traced.waitForEvents(1, outbound);
    expectOutbound(events, "GET", "/nb", 200, `127.0.0.1:${server.port}`);
  });

  test("UDP and Unix sockets are left alone", async () => {
    const script = [
      "import socket, os, tempfile",
      "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('127.0.0.1', 0)); port = u.getsockname()[1]",
      "c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.connect(('127.0.0.1', port)); c.send(b'dgram')",
      "print(u.recv(10), c.getpeername()[1] == port)",
      "path = os.path.join(tempfile.mkdtemp(), 's')",
      "l = socket.socket(socket.AF_UNIX); l.bind(path); l.listen()",
      "k = socket.socket(socket.AF_UNIX); k.connect(path); a, _ = l.accept(); k.send(b'unix'); print(a.recv(10))",
    ].join("\n");
    const traced = start(["python3", "-c", script]);
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe("b'dgram' True\nb'unix'\n");
    expect(traced.stderr()).not.toContain("intercepted");
  });
});
