/**
 * A first-in first-out queue bounded by a count and, optionally, by a total of sizes the caller gives each item.
 * `push` is O(1) and never grows the queue past its bounds: an item that does not fit is refused and counted in
 * `dropped`, so a slow consumer costs bounded memory and never slows the producer. A ring buffer that doubles up
 * to `capacity`, so a queue that stays short stays small.
 */
export class BoundedQueue<T> {
  /** Items refused because the queue was full (by count or by size). */
  dropped = 0;
  private items: Array<T | undefined>;
  private sizes: number[];
  private head = 0;
  private count = 0;
  private total = 0;

  constructor(
    readonly capacity: number,
    readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {
    const initial = Math.min(16, Math.max(1, capacity));
    this.items = new Array<T | undefined>(initial);
    this.sizes = new Array<number>(initial).fill(0);
  }

  get length(): number {
    return this.count;
  }

  /** The sum of the sizes of the items in the queue. */
  get bytes(): number {
    return this.total;
  }

  /** Appends `item` (of `size` towards maxBytes); false, counted as dropped, when it does not fit. */
  push(item: T, size = 0): boolean {
    if (this.count >= this.capacity || this.total + size > this.maxBytes) {
      this.dropped++;
      return false;
    }
    if (this.count === this.items.length) this.grow();
    const at = (this.head + this.count) % this.items.length;
    this.items[at] = item;
    this.sizes[at] = size;
    this.count++;
    this.total += size;
    return true;
  }

  /** The oldest item, removed; undefined when empty. */
  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const at = this.head;
    const item = this.items[at];
    this.items[at] = undefined;
    this.total -= this.sizes[at]!;
    this.head = (at + 1) % this.items.length;
    this.count--;
    if (this.count === 0) this.total = 0;
    return item;
  }

  /** The oldest item, left in place; undefined when empty. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.items[this.head];
  }

  /** The size given with the oldest item; 0 when empty. */
  peekSize(): number {
    return this.count === 0 ? 0 : this.sizes[this.head]!;
  }

  /** Empties the queue; returns how many items it held (not counted as dropped: the caller decides). */
  clear(): number {
    const n = this.count;
    this.items = new Array<T | undefined>(Math.min(16, Math.max(1, this.capacity)));
    this.sizes = new Array<number>(this.items.length).fill(0);
    this.head = 0;
    this.count = 0;
    this.total = 0;
    return n;
  }

  private grow(): void {
    const size = Math.min(this.capacity, this.items.length * 2);
    const items = new Array<T | undefined>(size);
    const sizes = new Array<number>(size).fill(0);
    for (let i = 0; i < this.count; i++) {
      const from = (this.head + i) % this.items.length;
      items[i] = this.items[from];
      sizes[i] = this.sizes[from]!;
    }
    this.items = items;
    this.sizes = sizes;
    this.head = 0;
  }
}
