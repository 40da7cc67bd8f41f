import { harEntryText, inPageOrder, inWriteOrder } from "~/lib/har.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { decodeResult, decodeResultData } from "~/lib/protocol/tunnel.ts";

/**
 * A tunnel result frame to turn into HAR entries: a page of "events" (ids: the page's ids, oldest first), or
 * one "event" with its outbound calls (no ids).
 */
export type HarTextsJob = { frame: Uint8Array; ids?: string[] };

/**
 * The entries' texts in the order a streamed HAR writes them; isFound is false for an "event" not found.
 * `webSocketHandshake`: the "event" asked for is a WebSocket message, whose HAR is its handshake's.
 */
export type HarTexts = { texts: Uint8Array[]; isFound: boolean; webSocketHandshake?: string };

/** Why a frame gave no entries: code says how the tunnel reported it (null: the frame itself was bad). */
export type HarTextsError = { code: "UNAVAILABLE" | "BAD_REQUEST" | null; message: string };

/**
 * Reads a result frame and writes its events' HAR entries (harEntryText). Never throws: the caller may be on
 * another thread. The frame is decoded here, not by the caller, so the events' text and its garbage stay here.
 */
export async function harEntryTexts({ frame, ids }: HarTextsJob): Promise<HarTexts | { error: HarTextsError }> {
  try {
    const result = decodeResult(frame);
    if (result.tunnelError) return { error: { code: "UNAVAILABLE", message: result.tunnelError } };
    if (result.databaseError) return { error: { code: "BAD_REQUEST", message: result.databaseError } };
    const data = await decodeResultData(result);
    const rows = data.data as unknown as TracedEvent[];
    let events: TracedEvent[];
    if (ids) events = inPageOrder(rows, ids);
    else if (rows[0]?.protocol === "ws" && rows[0].parent_event_id)
      return { texts: [], isFound: true, webSocketHandshake: rows[0].parent_event_id };
    else if (rows[0]) events = [rows[0], ...(data.children ?? [])];
    else return { texts: [], isFound: false };
    const encoder = new TextEncoder();
    return { texts: inWriteOrder(events).map((item) => harEntryText(item, encoder)), isFound: true };
  } catch (err) {
    return { error: { code: null, message: err instanceof Error ? err.message : String(err) } };
  }
}
