/**
 * A WebSocket echo server for the browser test, run under `tapscope run`: "/" is a page whose script opens a
 * WebSocket to "/chat" (Chromium offers permessage-deflate, which this server accepts), sends a JSON message, a long
 * text and bytes, reads the echoes and closes; `window.conversation` resolves with what it received. Prints
 * "listening <port>" once it serves.
 */
const page = `<!doctype html>
<meta charset="utf-8">
<title>chat</title>
<pre id="log"></pre>
<script>
window.conversation = new Promise((resolve, reject) => {
  const ws = new WebSocket("ws://" + location.host + "/chat?room=e2e");
  ws.binaryType = "arraybuffer";
  const got = [];
  ws.onerror = () => reject(new Error("WebSocket error"));
  ws.onmessage = (e) => {
    got.push(typeof e.data === "string" ? (e.data.length > 100 ? "text of " + e.data.length + " characters" : e.data) : "binary " + Array.from(new Uint8Array(e.data)).join(","));
    document.getElementById("log").textContent = got.join("\\n");
    if (got.length === 3) ws.close(1000, "bye");
  };
  ws.onclose = (e) => resolve({ got, code: e.code, reason: e.reason, extensions: ws.extensions });
  ws.onopen = () => {
    ws.send(JSON.stringify({ op: "subscribe", topic: "prices", user: "ann" }));
    ws.send("tick ".repeat(2000));
    ws.send(new Uint8Array([0, 1, 2, 253, 254, 255]));
  };
});
</script>`;

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req, srv) {
    if (new URL(req.url).pathname === "/chat") {
      if (srv.upgrade(req)) return;
      return new Response("not a WebSocket", { status: 400 });
    }
    return new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } });
  },
  websocket: {
    perMessageDeflate: true,
    message(ws, message) {
      ws.send(typeof message === "string" ? `echo: ${message}` : message);
    },
  },
});
console.log(`listening ${server.port}`);

export {};
