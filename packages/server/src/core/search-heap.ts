/** The best tools of a search by score, ties by id (docs/protocol.md 9.5, `[search.deterministic]`). */

/**
 * The best `capacity` tools by score (ties by id), the worst kept on top: most tools lose to it at one comparison.
 */
export class Heap {
  private readonly items: number[] = [];

  constructor(
    private readonly capacity: number,
    private readonly score: Float64Array,
    private readonly idRank: Int32Array,
  ) {}

  full(): boolean {
    return this.items.length >= this.capacity;
  }

  /** The score a tool must beat (or equal, with a smaller id) to be kept; none while the heap is not full. */
  worstScore(): number {
    return this.full() ? (this.score[this.items[0] as number] as number) : Number.NEGATIVE_INFINITY;
  }

  add(doc: number): void {
    const items = this.items;
    if (items.length < this.capacity) {
      items.push(doc);
      let i = items.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.before(items[parent] as number, items[i] as number)) {
          return;
        }
        swap(items, i, parent);
        i = parent;
      }
      return;
    }
    if (!this.before(doc, items[0] as number)) {
      return;
    }
    items[0] = doc;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let worst = i;
      if (left < items.length && this.before(items[worst] as number, items[left] as number)) {
        worst = left;
      }
      if (right < items.length && this.before(items[worst] as number, items[right] as number)) {
        worst = right;
      }
      if (worst === i) {
        return;
      }
      swap(items, i, worst);
      i = worst;
    }
  }

  /** The kept tools, best first. */
  sorted(): number[] {
    return [...this.items].sort((a, b) => (this.before(a, b) ? -1 : this.before(b, a) ? 1 : 0));
  }

  /** Whether `a` ranks before `b`: a higher score, or the same and a smaller id (`[search.deterministic]`). */
  private before(a: number, b: number): boolean {
    const sa = this.score[a] as number;
    const sb = this.score[b] as number;
    return sa > sb || (sa === sb && (this.idRank[a] as number) < (this.idRank[b] as number));
  }
}

/**
 * Swaps two places of `items` through a variable: a destructuring swap allocated an array each time, 4.6 KB of the
 * 12.7 KB a search's page allocated (bench/results/notes.md).
 */
function swap(items: number[], a: number, b: number): void {
  const kept = items[a] as number;
  items[a] = items[b] as number;
  items[b] = kept;
}
