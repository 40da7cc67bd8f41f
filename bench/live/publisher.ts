/**
 * The benchmark's publisher process: joins like `tapscope run` without a token (POST /api/JoinPublisher ->
 * a new shared link), opens the publish socket, and on "go" sends `rate` events/s for `seconds`, one message per
 * `batchMs` (binary UTF-8 JSON frames, as the agent sends them). Each event's `time` is its send instant.
 */
import { benchEvent, nowUs } from "./events.ts";

const [port, rate, seconds, batchMs] = process.argv.slice(2).map(Number) as [number, number, number, number];
const base = `http://127.0.0.1:${port}`;
const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

const join = await fetch(`${base}/api/JoinPublisher`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
if (join.status !== 200) throw new Error(`JoinPublisher: ${join.status} ${await join.text()}`);
const { websocketUrl, linkId } = (await join.json()) as { websocketUrl: string; linkId: string };
const socketUrl = new URL(websocketUrl);
const ws = new WebSocket(`ws://127.0.0.1:${port}${socketUrl.pathname}${socketUrl.search}`);
ws.binaryType = "arraybuffer";
let accepted = 0;
let rateLimited = 0;
let refused = 0;
let acks = 0;
let errors = 0;
ws.onmessage = (m) => {
  const msg = JSON.parse(typeof m.data === "string" ? m.data : new TextDecoder().decode(m.data as ArrayBuffer));
  if (msg.type === "ready") reply({ type: "ready", linkId });
  if (msg.type === "ack") {
    acks++;
    accepted += msg.accepted;
    rateLimited += msg.rateLimited;
    refused += msg.refused;
  }
  if (msg.type === "error") {
    acks++;
    errors++;
  }
};

const encoder = new TextEncoder();
const maxEvents = 500;

async function publish(): Promise<void> {
  const total = Math.round(rate * seconds);
  const t0 = performance.now();
  let sent = 0;
  let seq = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    if (due > sent) {
      // After a stall the catch-up is split, as the agent does, to stay within maxEventsPerMessage.
      for (let from = sent; from < due; from += maxEvents) {
        const at = nowUs();
        const parts: string[] = [];
        for (let i = from; i < Math.min(due, from + maxEvents); i++) parts.push(JSON.stringify(benchEvent(i, at)));
        ws.send(encoder.encode(`{"type":"events","seq":${++seq},"events":[${parts.join(",")}]}`));
      }
      sent = due;
    }
    await Bun.sleep(batchMs);
  }
  const deadline = Date.now() + 10_000;
  while (acks < seq && Date.now() < deadline) await Bun.sleep(10);
  reply({ type: "done", published: sent, messages: seq, accepted, rateLimited, refused, errors, wallMs: performance.now() - t0 });
}

for await (const chunk of process.stdin) {
  const text = new TextDecoder().decode(chunk);
  if (text.includes('"go"')) await publish();
  if (text.includes('"quit"')) {
    ws.close();
    process.exit(0);
  }
}
