import { expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { eventFieldTable, type TracedEvent } from "~/lib/protocol/event.ts";
import { deriveEventFields, type EventFields, type EventOf } from "~/lib/protocol/event-fields.ts";
import type { EventStore } from "~/store/types.ts";
import { tracedEvent } from "../support/event-factory.ts";

/** The event field table with one more row, as the next field will be added: the handler that served a request. */
export const withRoute = [
  ...eventFieldTable,
  { name: "http_handler", type: "text", max: 256, isQueryable: true, shown: "export" },
] as const;
export type RoutedEvent = EventOf<typeof withRoute>;
export const routed: EventFields = deriveEventFields(withRoute);

export function routedEvent(route: string, overrides: Partial<TracedEvent> = {}): RoutedEvent {
  return { ...tracedEvent(overrides), http_handler: route };
}

const routeOf = (e: TracedEvent | undefined) => (e as unknown as RoutedEvent | undefined)?.http_handler;

/**
 * A field added to the table reaches a namespace's table stored before it: a server of the new table adds the column
 * when it opens the table (old rows read the neutral value), and a server of the old table (the rest of a cluster
 * during a rolling update, or a rollback) still writes and reads it. `open` opens the same store again, with the
 * given field table (the server's own when absent); one is open at a time (a DuckDB file has one server).
 */
export function testAddedField(name: string, open: (fields?: EventFields) => Promise<EventStore>, timeoutMs = 90_000): void {
  test(
    `${name}: a field added to the table reaches tables stored before it; servers of the old table still write to them`,
    async () => {
      const ns = randomUUID();
      const time = 1_760_000_000_000_000;
      const old = tracedEvent({ time });
      const before = await open();
      await before.insert(ns, [old]);
      await before.close();

      const after = await open(routed);
      const fresh = routedEvent("/users/:id", { time: time + 1 });
      await after.insert(ns, [fresh] as unknown as TracedEvent[]);
      const both = await after.getEvents(ns, [old.event_id, fresh.event_id]);
      expect(new Map(both.map((e) => [e.event_id, routeOf(e)]))).toEqual(
        new Map([
          [old.event_id, ""],
          [fresh.event_id, "/users/:id"],
        ]),
      );

      await after.close();

      const stillOld = await open();
      const later = tracedEvent({ time: time + 2 });
      await stillOld.insert(ns, [later]);
      expect((await stillOld.getEvents(ns, [fresh.event_id]))[0]?.http_req_path).toBe(fresh.http_req_path);
      await stillOld.close();

      const again = await open(routed);
      const global = { lowerMs: time / 1000 - 1, upperMs: time / 1000 + 1 };
      const page = await again.queryRows(ns, {
        filter: { clauses: [{ type: "String", column: "http_handler" as never, op: "Equals", value: "" }], global },
      });
      expect(page.data.map((r) => r.event_id).sort()).toEqual([old.event_id, later.event_id].sort());
      expect(routeOf((await again.getEvent(ns, later.event_id))?.event)).toBe("");
      await again.dropNamespace(ns);
      await again.close();
    },
    timeoutMs,
  );
}
