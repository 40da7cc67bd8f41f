/** The last N serialized events of a channel, bounded by count and by bytes, for viewers who join late. */
export class EventHistory<T> {
  private readonly items: Array<{ item: T; json: string } | undefined>;
  private head = 0;
  private size = 0;
  private bytes = 0;

  constructor(
    readonly capacity: number,
    private readonly maxBytes: number,
  ) {
    this.items = new Array(capacity);
  }

  get length(): number {
    return this.size;
  }

  get byteLength(): number {
    return this.bytes;
  }

  push(item: T, json: string): void {
    if (this.capacity === 0) return;
    if (this.size === this.capacity) this.dropOldest();
    this.items[(this.head + this.size) % this.capacity] = { item, json };
    this.size++;
    this.bytes += json.length;
    while (this.bytes > this.maxBytes && this.size > 1) this.dropOldest();
  }

  clear(): void {
    this.items.fill(undefined);
    this.head = 0;
    this.size = 0;
    this.bytes = 0;
  }

  /** Oldest first. */
  *entries(): Generator<{ item: T; json: string }> {
    for (let k = 0; k < this.size; k++) yield this.items[(this.head + k) % this.capacity]!;
  }

  private dropOldest(): void {
    const oldest = this.items[this.head];
    if (oldest) this.bytes -= oldest.json.length;
    this.items[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.size--;
  }
}
