/**
 * The last N events of a channel, bounded by count and by bytes, for viewers who join late. An event is
 * serialized when somebody needs it (a viewer's filter matched it, or a history is sent), not on arrival:
 * with nobody watching, the history costs no JSON at all. Sizes are counted from the JSON when there is
 * one, else from the caller's estimate.
 */
type Entry<T> = { item: T; json: string | null; bytes: number };

export class EventHistory<T> {
  private readonly items: Array<Entry<T> | undefined>;
  private head = 0;
  private size = 0;
  private bytes = 0;

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

  /** `json` when already made; otherwise `estimatedBytes` counts toward the byte bound until it is. */
  push(item: T, json: string | null, estimatedBytes = 0): void {
    if (this.capacity === 0) return;
    if (this.size === this.capacity) this.dropOldest();
    const bytes = json === null ? estimatedBytes : json.length;
    this.items[(this.head + this.size) % this.capacity] = { item, json, bytes };
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

  /** Oldest first; `json()` serializes on first use and keeps the text. */
  *entries(): Generator<{ item: T; json: () => string }> {
    for (let k = 0; k < this.size; k++) {
      const entry = this.items[(this.head + k) % this.capacity]!;
      yield { item: entry.item, json: () => (entry.json ??= this.serialize(entry.item)) };
    }
  }

  private dropOldest(): void {
    const oldest = this.items[this.head];
    if (oldest) this.bytes -= oldest.bytes;
    this.items[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.size--;
  }
}
