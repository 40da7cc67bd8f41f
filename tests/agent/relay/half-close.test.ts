import { afterAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "../../support/ports.ts";
import { ROOT, type Running, start } from "../harness.ts";

/** Half-closed connections and resets behave under `tapscope run` as they do without it. */
const fixture = join(ROOT, "tests/agent/fixtures/closer.py");
const servers: Running[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

async function closer(traced: boolean): Promise<number> {
  const r = start(["python3", fixture], { traced });
  servers.push(r);
  const out = await r.waitForOutput(/port \d+/);
  return Number(/port (\d+)/.exec(out)![1]);
}

function halfClose(port: number): Promise<string> {
  return new Promise((done, fail) => {
    let text = "";
    const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true }, () => {
      socket.write("first part, ");
      setTimeout(() => socket.end("second part"), 50);
    });
    socket.on("data", (d) => {
      text += d;
    });
    socket.on("end", () => {
      socket.end();
      done(text);
    });
    socket.on("error", fail);
  });
}

function resetOutcome(port: number): Promise<string> {
  return new Promise((done) => {
    const socket = connect({ port, host: "127.0.0.1" }, () => socket.write("reset please"));
    socket.on("error", (e: NodeJS.ErrnoException) => done(e.code ?? "error"));
    socket.on("end", () => done("end"));
  });
}

describe("half-close and reset under tapscope run", () => {
  test("the server reads to the client's FIN and still answers", async () => {
    const [direct, traced] = await Promise.all([closer(false), closer(true)]);
    const expected = "after FIN: FIRST PART, SECOND PART";
    expect(await halfClose(direct)).toBe(expected);
    expect(await halfClose(traced)).toBe(expected);
  });

  test("a reset by the program reaches the client as a reset", async () => {
    const [direct, traced] = await Promise.all([closer(false), closer(true)]);
    expect(await resetOutcome(direct)).toBe("ECONNRESET");
    expect(await resetOutcome(traced)).toBe("ECONNRESET");
  });
});

describe("churn under tapscope run", () => {
  test("clients that vanish mid-request (resets, half-sent requests) never break the program or tapscope", async () => {
    const port = await freePort();
    const r = start(["node", join(ROOT, "tests/agent/fixtures/node-server.mjs"), String(port)]);
    servers.push(r);
    await r.waitForOutput("listening");
    const abrupt = Array.from({ length: 60 }, (_, i) =>
      Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          open(socket) {
            socket.write(i % 3 === 0 ? "GET /hel" : i % 3 === 1 ? "POST /echo HTTP/1.1\r\nContent-Length: 100000\r\n\r\nabc" : "");
            setTimeout(() => (i % 2 ? socket.terminate() : socket.end()), i % 7);
          },
          data() {},
        },
      }).catch(() => null),
    );
    await Promise.all(abrupt);
    await Bun.sleep(100);
    for (let i = 0; i < 5; i++) {
      expect(await (await fetch(`http://127.0.0.1:${port}/hello?after=${i}`)).text()).toBe("hello from node");
    }
    expect(r.proc.exitCode).toBeNull();
    expect(r.stderr()).not.toContain("internal error");
  });
});
