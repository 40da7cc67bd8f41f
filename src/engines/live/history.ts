/**
 * The last N events of a channel, bounded by count and by bytes, for viewers who join late. An event is
 * serialized when somebody needs it (a viewer's filter matched it, or a history is sent), not on arrival:
 * with nobody watching, the history costs no JSON at all. Sizes are counted from the JSON when there is
 * one, else from the caller's estimate.
 */
/** `seq` numbers every event ever pushed, so a reader can resume where it stopped (ADR 0005). */
export type HistoryEntry<T> = { seq: number; item: T; json: string | null; bytes: number };

export class EventHistory<T> {
  private readonly items: Array<HistoryEntry<T> | undefined>;
  private head = 0;
  private size = 0;
  private bytes = 0;
  private pushed = 0;

  constructor(
    readonly capacity: number,
    private readonly maxBytes: number,
    private readonly serialize: (item: T) => string = (item) => JSON.stringify(item),
  ) {
    this.items = new Array(capacity);
  }

  get length(): number {
    return this.size;
  }

  get byteLength(): number {
    return this.bytes;
  }

  /** The oldest retained entry's seq (equal to endSeq when empty). */
  get firstSeq(): number {
    return this.pushed - this.size;
  }

  /** The seq the next push gets. */
  get endSeq(): number {
    return this.pushed;
  }

  /** The entry numbered `seq`, if still retained. */
  at(seq: number): HistoryEntry<T> | undefined {
    const k = seq - this.firstSeq;
    return k >= 0 && k < this.size ? this.items[(this.head + k) % this.capacity] : undefined;
  }

  /** The entry's JSON, made on first use and kept. */
  json(entry: HistoryEntry<T>): string {
    entry.json ??= this.serialize(entry.item);
    return entry.json;
  }

  /** `json` when already made; otherwise `estimatedBytes` counts toward the byte bound until it is. */
  push(item: T, json: string | null, estimatedBytes = 0): void {
    if (this.capacity === 0) return;
    if (this.size === this.capacity) this.dropOldest();
    const bytes = json === null ? estimatedBytes : json.length;
    this.items[(this.head + this.size) % this.capacity] = { seq: this.pushed++, item, json, bytes };
    this.size++;
    this.bytes += bytes;
    while (this.bytes > this.maxBytes && this.size > 1) this.dropOldest();
  }

  clear(): void {
    this.items.fill(undefined);
    this.head = 0;
    this.size = 0;
    this.bytes = 0;
  }

  /** Oldest first. */
  entries(): HistoryEntry<T>[] {
    const out: HistoryEntry<T>[] = [];
    for (let k = 0; k < this.size; k++) out.push(this.items[(this.head + k) % this.capacity]!);
    return out;
  }

  private dropOldest(): void {
    const oldest = this.items[this.head];
    if (oldest) this.bytes -= oldest.bytes;
    this.items[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.size--;
  }
}
