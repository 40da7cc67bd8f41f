import { describe, expect, test } from "bun:test";
import { InboundTable, newInboundTableBuffer } from "~/agent/relay/inbound-table.ts";

describe("InboundTable (relay threads -> the main thread's accept and getpeername)", () => {
  test("what one thread writes for a port, another reads: the thread, the real client and the address it reached", () => {
    const buffer = newInboundTableBuffer();
    const writer = new InboundTable(buffer);
    const reader = new InboundTable(buffer);
    writer.set(40_001, 1, { family: 4, ip: "203.0.113.9", port: 55_123 }, { family: 4, ip: "127.0.0.1", port: 8080 });
    writer.set(40_002, 0, { family: 6, ip: "2001:db8::7", port: 443, scopeId: 0 }, { family: 6, ip: "::1", port: 8443, scopeId: 0 });
    expect(reader.get(40_001)).toEqual({
      thread: 1,
      peer: { family: 4, ip: "203.0.113.9", port: 55_123 },
      local: { family: 4, ip: "127.0.0.1", port: 8080 },
    });
    expect(reader.get(40_002)).toMatchObject({
      thread: 0,
      peer: { family: 6, ip: "2001:db8::7", port: 443 },
      local: { ip: "::1", port: 8443 },
    });
    expect(reader.get(40_003)).toBeNull();
    expect(reader.get(-1)).toBeNull();
    expect(reader.get(70_000)).toBeNull();
  });

  test("clearing a port leaves a newer connection on the same port alone", () => {
    const table = new InboundTable(newInboundTableBuffer());
    const first = table.set(40_010, 0, { family: 4, ip: "10.0.0.1", port: 1 }, { family: 4, ip: "127.0.0.1", port: 80 });
    const second = table.set(40_010, 1, { family: 4, ip: "10.0.0.2", port: 2 }, { family: 4, ip: "127.0.0.1", port: 80 });
    table.clear(40_010, first);
    expect(table.get(40_010)?.peer.ip).toBe("10.0.0.2");
    table.clear(40_010, second);
    expect(table.get(40_010)).toBeNull();
  });
});
