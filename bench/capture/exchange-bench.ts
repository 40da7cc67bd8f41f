/**
 * The tracer's cost per exchange as the relay feeds it: wrk's request and node's response (bench/capture/server.js)
 * in fresh read buffers, parsed, paired and built into events. Run: bun bench/capture/exchange-bench.ts
 * [response bytes, default 65536] [payload limit, default 65536] [exchanges per round, default 20000; --smoke: 200].
 * Prints µs per exchange for each of 9 rounds (read the minimum on a loaded machine).
 */
import { createTracer } from "~/agent/tracer.ts";
import { isSmoke, positional } from "../options.ts";

const host = {
  hostname: "bench",
  gcp_project: "",
  kubernetes_namespace: "",
  gke_cluster_location: "",
  gke_cluster_name: "",
  gke_node_name: "",
};
const size = Number(positional[0] ?? 65536);
const limit = Number(positional[1] ?? 65536);
const N = Number(positional[2] ?? (isSmoke ? 200 : 20000));
const enc = new TextEncoder();
const req = enc.encode("GET / HTTP/1.1\r\nHost: 127.0.0.1:18841\r\n\r\n");
const head = enc.encode(
  `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${size}\r\nDate: Sat, 21 Nov 2026 13:00:00 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n`,
);
const resp = new Uint8Array(head.length + size).fill(97);
resp.set(head);
let events = 0;
const tracer = createTracer({
  host,
  payloadLimit: limit,
  onEvent: () => {
    events++;
  },
  processInfo: (pid) => ({ pid, executableName: "node", executableSize: 1, commandLine: "node", user: "root" }),
});
for (let round = 0; round < 9; round++) {
  const tap = tracer.onOpen({
    id: 1,
    direction: "inbound",
    clientAddr: "127.0.0.1:1",
    serverAddr: "127.0.0.1:2",
    pid: 1,
    startedAt: 1,
    connectedAt: 1,
  })!;
  const t = performance.now();
  for (let i = 0; i < N; i++) {
    // fresh buffers per read, as the relay hands them
    tap.onData(true, req.slice(), i);
    tap.onData(false, resp.slice(), i + 1);
    if ((i & 255) === 255) tracer.flush();
  }
  tracer.flush();
  tap.onClose(N + 2);
  const dt = performance.now() - t;
  console.log(
    `size=${size} limit=${limit} ${((dt * 1000) / N).toFixed(2)} us/exchange (reads copied in, as from a socket) events=${events}`,
  );
}
