import { expect, test } from "bun:test";
import type { Socket } from "bun";
import type { ConnectionTap } from "~/agent/relay/observer.ts";
import { type LegData, Pipe } from "~/agent/relay/pipe.ts";
import { waitUntil } from "../harness.ts";
import { connection } from "../parse/helpers.ts";

/**
 * An inbound connection waits (briefly) for the program's accept before it is shown, so its events name the process
 * that accepted it. When the accept comes after that wait (a busy machine, a daemon's worker), the connection was shown
 * with the listener's process, often one that has exited: the accepting process is handed on when it is known.
 */
test("a connection shown before its accept gets the accepting process once the accept comes, once", async () => {
  const told: number[] = [];
  const observer = {
    onOpen: (): ConnectionTap => ({ onData() {}, onClose() {}, onProcess: (pid) => told.push(pid) }),
  };
  const pipe = new Pipe(connection(1, "inbound", 7), observer, undefined, { deferTap: true });
  await waitUntil(() => !pipe.isDeferred, 5000, "the wait for the accept to end");
  expect(pipe.info.pid).toBe(7);
  pipe.release(9);
  // A later getpeername by another process (a child it forked) does not move it again.
  pipe.release(11);
  expect(told).toEqual([9]);
  expect(pipe.info.pid).toBe(9);
});

test("an accept within the wait names the process at once: nothing to hand on later", () => {
  const told: number[] = [];
  const opened: number[] = [];
  const observer = {
    onOpen: (info: { pid: number }): ConnectionTap => {
      opened.push(info.pid);
      return { onData() {}, onClose() {}, onProcess: (pid) => told.push(pid) };
    },
  };
  const pipe = new Pipe(connection(2, "inbound", 7), observer, undefined, { deferTap: true });
  pipe.release(9);
  pipe.release(11);
  expect([opened, told]).toEqual([[9], []]);
});

test("a held connection leaves the held set only once its bytes are parsed: a lookup from another thread still waits for it", () => {
  const seen: string[] = [];
  const observer = {
    onOpen: (): ConnectionTap => ({ onData: (_fromClient, chunk) => seen.push(new TextDecoder().decode(chunk)), onClose() {} }),
  };
  let seenAtRelease = null as string[] | null;
  const pipe = new Pipe(connection(3, "inbound", 7), observer, undefined, {
    deferTap: true,
    onRelease: () => {
      seenAtRelease = [...seen];
    },
  });
  // Two legs that take every byte: the client's request is forwarded, and held from the tap.
  const leg = () =>
    ({ data: undefined, setNoDelay() {}, write: (b: Uint8Array) => b.length, pause() {}, resume() {} }) as unknown as Socket<LegData>;
  pipe.attach("client", leg());
  pipe.attach("server", leg());
  pipe.onData("client", new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n"));
  expect(seen).toEqual([]);
  pipe.release(9);
  expect(seenAtRelease).toEqual(["GET / HTTP/1.1\r\n\r\n"]);
});
