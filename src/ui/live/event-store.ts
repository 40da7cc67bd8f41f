import type { EventPredicate } from "~/lib/filter/evaluate.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type PendingRequest, pendingEvent } from "~/lib/protocol/pending.ts";
import { markPendingRow } from "./pending-rows.ts";

/** How many events a frame keeps in memory; the oldest go first. */
export const MAX_EVENTS = 100_000;
const TRIM_SLACK = 10_000;
/** Rows shown as pending at once; notices beyond wait for their events. */
export const MAX_PENDING = 1000;

/**
 * The frame's events, oldest first (the list shows them newest first). Mutable for speed at thousands of
 * events per second; listeners are told at most once per animation frame and read `version` as the snapshot.
 */
export class EventStore {
  all: TracedEvent[] = [];
  /** The events matching the applied filters, oldest first. */
  shown: TracedEvent[] = [];
  version = 0;
  /** Bumped when the applied filters change (a paused view refreshes its frozen copy then). */
  filterVersion = 0;
  /** Events that joined `shown` since the store was made (a paused view counts what it is not showing). */
  shownAdded = 0;
  private byId = new Map<string, TracedEvent>();
  private childrenOf = new Map<string, TracedEvent[]>();
  private predicate: EventPredicate | null = null;
  /** WebSocket messages are left out of `shown` (the toolbar's toggle); their handshakes stay. */
  isHidingMessages = false;
  /** A WebSocket message was seen (the toolbar offers its toggle then). */
  hasMessages = false;
  private listeners = new Set<() => void>();
  private scheduled = false;
  /** Rows of requests still waiting for their answer, by event id: the event with the same id replaces each. */
  private pendingRows = new Map<string, TracedEvent>();

  constructor(private readonly capacity = MAX_EVENTS) {}

  subscribe = (listener: () => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getVersion = () => this.version;

  get(eventId: string): TracedEvent | undefined {
    return this.byId.get(eventId);
  }

  /** Outbound calls made while serving an inbound request, in time order. */
  children(eventId: string): TracedEvent[] {
    return this.childrenOf.get(eventId) ?? [];
  }

  add(events: TracedEvent[]): TracedEvent[] {
    const added: TracedEvent[] = [];
    for (const event of events) {
      if (!event || typeof event.event_id !== "string") continue;
      this.removePending(event.event_id);
      if (this.byId.has(event.event_id)) continue;
      this.index(event);
      insertByTime(this.all, event);
      if (this.matches(event)) {
        insertByTime(this.shown, event);
        this.shownAdded++;
      }
      added.push(event);
    }
    if (added.length > 0) {
      this.trim();
      this.changed();
    }
    return added;
  }

  /**
   * Requests still waiting for their answer: shown as pending rows (time waited so far) until their event comes. One
   * whose event is already here (it overtook its notice) is not shown.
   */
  addPending(requests: PendingRequest[]): void {
    let isChanged = false;
    for (const request of requests) {
      if (this.pendingRows.size >= MAX_PENDING) break;
      if (!request || typeof request.event_id !== "string" || this.byId.has(request.event_id)) continue;
      const row = pendingEvent(request);
      markPendingRow(row);
      this.pendingRows.set(row.event_id, row);
      this.index(row);
      insertByTime(this.all, row);
      if (this.matches(row)) insertByTime(this.shown, row);
      isChanged = true;
    }
    if (isChanged) this.changed();
  }

  /** Requests shown as pending whose events this view will not show (the server's filters left them out). */
  settle(eventIds: string[]): void {
    let isChanged = false;
    for (const id of eventIds) isChanged = this.removePending(id) || isChanged;
    if (isChanged) this.changed();
  }

  private removePending(eventId: string): boolean {
    if (this.pendingRows.size === 0) return false;
    const row = this.pendingRows.get(eventId);
    if (!row) return false;
    this.pendingRows.delete(eventId);
    this.byId.delete(eventId);
    removeFrom(this.all, row);
    removeFrom(this.shown, row);
    const siblings = row.parent_event_id ? this.childrenOf.get(row.parent_event_id) : undefined;
    if (siblings) removeFrom(siblings, row);
    this.changed();
    return true;
  }

  /**
   * Forgets every event (the toolbar's Clear). Retained events the server sends again after a reconnect or a filter
   * change stay cleared: history that started before the clear is not merged back.
   */
  clear() {
    this.clearedBefore = this.all.reduce((latest, e) => Math.max(latest, e.time), this.clearedBefore);
    this.all = [];
    this.shown = [];
    this.byId.clear();
    this.childrenOf.clear();
    this.pendingRows.clear();
    this.changed();
  }

  private clearedBefore = Number.NEGATIVE_INFINITY;

  /** Retained events the server sent after a (re)join or a filter change: merged in time order. */
  mergeHistory(events: TracedEvent[]): TracedEvent[] {
    for (const e of events) if (e && typeof e.event_id === "string") this.removePending(e.event_id);
    const fresh = events.filter((e) => e && typeof e.event_id === "string" && !this.byId.has(e.event_id) && e.time > this.clearedBefore);
    if (fresh.length === 0) return fresh;
    for (const event of fresh) this.index(event);
    this.all = this.all.concat(fresh).sort((a, b) => a.time - b.time);
    this.shown = this.all.filter(this.matches);
    this.trim();
    this.changed();
    return fresh;
  }

  /** The filters in force (their text), whose content conditions the detail marks. */
  filters: readonly string[] = [];

  setPredicate(predicate: EventPredicate | null, filters: readonly string[] = []) {
    this.predicate = predicate;
    this.filters = filters;
    this.refilter();
  }

  setHidingMessages(isHiding: boolean) {
    this.isHidingMessages = isHiding;
    this.refilter();
  }

  private matches = (event: TracedEvent): boolean =>
    !(this.isHidingMessages && event.protocol === "ws") && (!this.predicate || this.predicate(event));

  private refilter() {
    this.filterVersion++;
    this.shown = this.all.filter(this.matches);
    this.changed();
  }

  private index(event: TracedEvent) {
    this.byId.set(event.event_id, event);
    if (event.protocol === "ws") this.hasMessages = true;
    if (event.parent_event_id) {
      const siblings = this.childrenOf.get(event.parent_event_id);
      if (siblings) siblings.push(event);
      else this.childrenOf.set(event.parent_event_id, [event]);
    }
  }

  private trim() {
    if (this.all.length <= this.capacity + TRIM_SLACK) return;
    const dropped = this.all.slice(0, this.all.length - this.capacity);
    this.all = this.all.slice(this.all.length - this.capacity);
    for (const event of dropped) {
      this.byId.delete(event.event_id);
      this.pendingRows.delete(event.event_id);
      this.childrenOf.delete(event.event_id);
      const siblings = event.parent_event_id ? this.childrenOf.get(event.parent_event_id) : undefined;
      if (siblings)
        this.childrenOf.set(
          event.parent_event_id,
          siblings.filter((e) => e !== event),
        );
    }
    this.shown = this.shown.filter((e) => this.byId.has(e.event_id));
  }

  private changed() {
    this.version++;
    if (this.scheduled) return;
    this.scheduled = true;
    const flush = () => {
      this.scheduled = false;
      for (const listener of this.listeners) listener();
    };
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(flush);
    else setTimeout(flush, 16);
  }
}

function removeFrom(list: TracedEvent[], event: TracedEvent) {
  const at = list.lastIndexOf(event);
  if (at >= 0) list.splice(at, 1);
}

/** Events mostly arrive in time order, but an inbound request is published after the calls it made. */
function insertByTime(list: TracedEvent[], event: TracedEvent) {
  let at = list.length;
  while (at > 0 && list[at - 1]!.time > event.time) at--;
  if (at === list.length) list.push(event);
  else list.splice(at, 0, event);
}
