/**
 * A small response body as the relay hands it to the tracer (a fresh read of wrk's 150-byte 1 B response), kept in
 * a BodySample: side by side in one process, the sample before session 5 (every body in one read kept as a view,
 * after reading the read's `buffer` to check its size; a copy sized at least 1 KiB) against now (bodies up to 256
 * bytes copied into a buffer of their own length). Each round allocates the read in both, as the relay does.
 *
 *   bun bench/capture/body-sample-bench.ts [bodies per round, default 500000] [--smoke: 2,000]
 */
import { BodySample } from "~/agent/parse/body.ts";
import { isSmoke, positional } from "../options.ts";

/** The sample's first add before session 5, reduced to the one-read case this measures. */
class PreviousSample {
  private buf: Uint8Array | null = null;
  length = 0;
  constructor(
    private readonly limit: number,
    private readonly expectedLength: number,
  ) {}
  add(chunk: Uint8Array, start: number, end: number, isRetainable = false): void {
    const n = Math.min(end - start, this.limit);
    if (isRetainable && chunk.buffer.byteLength <= Math.max(2 * n, 4096)) {
      this.buf = chunk.subarray(start, start + n);
      this.length = n;
      return;
    }
    this.buf = new Uint8Array(Math.min(this.limit, Math.max(n, this.expectedLength, 1024)));
    for (let k = 0; k < n; k++) this.buf[k] = chunk[start + k]!;
    this.length = n;
  }
  bytes(): Uint8Array {
    return this.buf ? this.buf.subarray(0, this.length) : new Uint8Array(0);
  }
}

const perRound = Number(positional[0] ?? (isSmoke ? 2000 : 500_000));
const response = new Uint8Array(150).fill(97);
/** Keeps the 1-byte body at the end of a read; returns the kept length. */
function keepWith(Sample: typeof PreviousSample | typeof BodySample) {
  return (read: Uint8Array): number => {
    const sample = new Sample(65536, 1);
    sample.add(read, 149, 150, true);
    return sample.bytes().length;
  };
}
const modes = [
  ["before", keepWith(PreviousSample)],
  ["now", keepWith(BodySample)],
] as const;
const times = new Map<string, number[]>();
let kept = 0;
for (let round = 0; round < 7; round++) {
  for (const [name, keep] of round % 2 ? [...modes].reverse() : modes) {
    const t0 = performance.now();
    for (let i = 0; i < perRound; i++) kept += keep(response.slice());
    const us = ((performance.now() - t0) * 1000) / perRound;
    if (round > 0) times.set(name, [...(times.get(name) ?? []), us]);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const before = median(times.get("before")!);
const now = median(times.get("now")!);
console.log(
  `1-byte body from a fresh 150-byte read, read allocation included: before ${before.toFixed(3)} µs, now ${now.toFixed(3)} µs (now/before ${(now / before).toFixed(2)}); ${kept} bytes kept`,
);
