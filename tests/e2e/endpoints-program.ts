/**
 * A small real HTTP program with varied routes for the Endpoints browser test, run under `tapscope run`: numeric ids,
 * UUIDs, a version prefix and a dated file name. GET /orders/{uuid} is slow, and answers 500 while POST /mode?fail=1
 * is in force. It prints "listening on port <port>" once it serves.
 */
export {};

let isFailing = false;

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const url = new URL(req.url);
    if (req.method === "POST" && url.pathname === "/mode") {
      isFailing = url.searchParams.get("fail") === "1";
      return Response.json({ isFailing });
    }
    if (/^\/users\/\d+$/.test(url.pathname)) return Response.json({ id: url.pathname.split("/")[2] });
    if (/^\/orders\/[0-9a-f-]{36}$/.test(url.pathname)) {
      await Bun.sleep(150);
      return isFailing ? Response.json({ error: "payment backend down" }, { status: 500 }) : Response.json({ ok: true });
    }
    if (/^\/v1\/reports\/\d{4}-\d{2}-\d{2}\.csv$/.test(url.pathname)) return new Response("day,total\n1,2\n");
    return new Response("not found", { status: 404 });
  },
});
console.log(`listening on port ${server.port}`);
