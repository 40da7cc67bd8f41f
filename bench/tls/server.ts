/**
 * The HTTPS peer of bench/tls: answers `GET /<n>` with n bytes, over TLS with the certificate given on stdin
 * (JSON { cert, key } on one line). Prints its port.
 */
const input = Bun.stdin.stream().getReader();
let text = "";
while (!text.includes("\n")) text += new TextDecoder().decode((await input.read()).value);
const { cert, key } = JSON.parse(text) as { cert: string; key: string };
const bodies = new Map<number, string>();
const peer = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert, key },
  fetch(req) {
    const size = Math.min(1 << 20, Number(new URL(req.url).pathname.slice(1)) || 1);
    let body = bodies.get(size);
    if (!body) {
      body = "x".repeat(size);
      bodies.set(size, body);
    }
    return new Response(body);
  },
});
console.log(JSON.stringify({ port: peer.port }));

export {};
