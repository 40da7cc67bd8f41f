import { expect, test } from "bun:test";
import { join } from "node:path";

const root = join(import.meta.dir, "../../..");

/**
 * Bun raises the soft limit itself when it starts, so the server's own call is checked in a child that first
 * lowers its soft limit (setrlimit through libc) and then asks the server's function to raise it again.
 */
test("raiseDescriptorLimit takes the soft open-file limit up to the hard one", async () => {
  const script = `
    import { dlopen, FFIType, ptr } from "bun:ffi";
    import { raiseDescriptorLimit, readDescriptorLimit } from "~/lib/server/descriptor-limit.ts";
    const libc = dlopen("libc.so.6", { setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
    const hard = readDescriptorLimit().hard;
    libc.symbols.setrlimit(7, ptr(new BigUint64Array([256n, BigInt(hard)])));
    const lowered = readDescriptorLimit();
    const raised = await raiseDescriptorLimit();
    console.log(JSON.stringify({ lowered, raised }));
  `;
  const child = Bun.spawn([process.execPath, "-e", script], { cwd: root, stdout: "pipe", stderr: "pipe" });
  const out = await new Response(child.stdout).text();
  expect(await child.exited).toBe(0);
  const { lowered, raised } = JSON.parse(out) as { lowered: { soft: number; hard: number }; raised: { soft: number; hard: number } };
  expect(lowered.soft).toBe(256);
  expect(raised.soft).toBe(raised.hard);
  expect(raised.hard).toBe(lowered.hard);
});
