// The WebSocket echo server bench:ws measures: the `ws` package, no compression, every message sent back as it came.
import { WebSocketServer } from "ws";

const port = Number(process.argv[2]);
const server = new WebSocketServer({ host: "127.0.0.1", port, perMessageDeflate: false });
server.on("connection", (socket) => {
  socket.on("message", (data, isBinary) => socket.send(data, { binary: isBinary }));
});
