import { expect, test } from "bun:test";
import { AppError } from "~/lib/errors.ts";
import { NamespaceGate } from "~/store/guard.ts";

test("at most N queries run at once per namespace; a short queue waits; beyond it RATE_LIMITED", async () => {
  const gate = new NamespaceGate(2, 1);
  let running = 0;
  let peak = 0;
  const releases: Array<() => void> = [];
  const task = () =>
    new Promise<string>((resolve) => {
      running++;
      peak = Math.max(peak, running);
      releases.push(() => {
        running--;
        resolve("done");
      });
    });
  const a = gate.run("ns1", task);
  const b = gate.run("ns1", task);
  const c = gate.run("ns1", task); // queued
  const refused = await gate.run("ns1", task).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(AppError);
  expect((refused as AppError).code).toBe("RATE_LIMITED");
  // Another namespace is not held up by the busy one.
  const other = gate.run("ns2", async () => "other");
  expect(await other).toBe("other");
  expect(running).toBe(2);
  releases.shift()?.();
  await a;
  await Bun.sleep(0);
  expect(running).toBe(2); // the queued one took the freed slot
  while (releases.length) releases.shift()?.();
  await Bun.sleep(0);
  while (releases.length) releases.shift()?.();
  expect(await Promise.all([b, c])).toEqual(["done", "done"]);
  expect(peak).toBe(2);
});

test("a failing query frees its slot", async () => {
  const gate = new NamespaceGate(1, 0);
  await expect(gate.run("ns", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
  expect(await gate.run("ns", async () => 1)).toBe(1);
});
