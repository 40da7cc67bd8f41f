import { expect, test } from "bun:test";
import { connect } from "node:tls";
import { parseClientHello } from "~/agent/parse/sniff.ts";

/** The first bytes a real TLS client sends. */
async function captureHello(options: { servername?: string; ALPNProtocols?: string[]; ecdhCurve?: string }): Promise<Uint8Array> {
  let resolve: (bytes: Uint8Array) => void = () => {};
  const got = new Promise<Uint8Array>((r) => {
    resolve = r;
  });
  const listener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(socket, chunk) {
        resolve(new Uint8Array(chunk));
        socket.terminate();
      },
    },
  });
  const socket = connect({ host: "127.0.0.1", port: listener.port, ...options });
  socket.on("error", () => {});
  const bytes = await got;
  listener.stop(true);
  return bytes;
}

test("reads SNI and the offered ALPN list, in order, with its wire form", async () => {
  const bytes = await captureHello({ servername: "api.example.test", ALPNProtocols: ["h2", "http/1.1"] });
  const hello = parseClientHello(bytes, bytes.length);
  expect(hello).toEqual({
    serverName: "api.example.test",
    alpn: ["h2", "http/1.1"],
    alpnWire: new Uint8Array([2, 0x68, 0x32, 8, ...new TextEncoder().encode("http/1.1")]),
    groups: expect.any(Array),
    length: bytes.length,
  });
});

test("reads the offered key-exchange groups in order (IANA code points)", async () => {
  const bytes = await captureHello({ servername: "groups.test", ecdhCurve: "P-256:X25519" });
  expect(parseClientHello(bytes, bytes.length)).toMatchObject({ groups: [0x0017, 0x001d] });
});

test("no SNI and no ALPN", async () => {
  const bytes = await captureHello({});
  expect(parseClientHello(bytes, bytes.length)).toMatchObject({ serverName: "", alpn: [], alpnWire: null });
});

test("incomplete is 'more' at every cut; a hello split over two records still parses; garbage is null", async () => {
  const bytes = await captureHello({ servername: "split.test", ALPNProtocols: ["h2"] });
  for (let cut = 0; cut < bytes.length; cut++) expect(parseClientHello(bytes, cut)).toBe("more");
  const body = bytes.subarray(5);
  const half = 40;
  const split = new Uint8Array(bytes.length + 5);
  split.set([0x16, 0x03, 0x01, half >> 8, half & 0xff], 0);
  split.set(body.subarray(0, half), 5);
  const rest = body.length - half;
  split.set([0x16, 0x03, 0x01, rest >> 8, rest & 0xff], 5 + half);
  split.set(body.subarray(half), 10 + half);
  expect(parseClientHello(split, split.length)).toMatchObject({ serverName: "split.test", alpn: ["h2"], length: split.length });
  expect(parseClientHello(split, split.length - 1)).toBe("more");
  expect(parseClientHello(new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n"), 18)).toBeNull();
  const wrongType = bytes.slice();
  wrongType[5] = 0x02;
  expect(parseClientHello(wrongType, wrongType.length)).toBeNull();
});
