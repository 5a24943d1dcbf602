/** The write order of a bounded store's records, oldest first, taken from its head in amortized constant time. */

/**
 * Record ids in write order, oldest first, with lazy deletion: an entry whose record was removed or
 * rewritten since is skipped, and the queue is compacted once most of it is stale. Taking the oldest is
 * then amortized O(1), where iterating a Map or Set from its start would walk the holes that its
 * deletions leave behind (V8 keeps them until a rehash), which cost O(n) per write.
 */
export class WriteQueue {
  private ids: string[] = [];
  private seqs: number[] = [];
  private head = 0;

  push(id: string, seq: number): void {
    this.ids.push(id);
    this.seqs.push(seq);
  }

  /** The live entries, oldest first (`isLive` says whether an entry still names its record's latest write). */
  *live(isLive: (id: string, seq: number) => boolean): Generator<string> {
    for (let i = this.head; i < this.ids.length; i++) {
      const id = this.ids[i] as string;
      if (isLive(id, this.seqs[i] as number)) {
        yield id;
      } else if (i === this.head) {
        this.head++;
      }
    }
  }

  /** How many entries the queue holds, consumed ones included (for tests of its bound). */
  get length(): number {
    return this.ids.length;
  }

  /**
   * Drops stale entries once they outnumber `liveCount` (plus some slack), and the entries already
   * passed over once they are half the queue: amortized O(1) per write, and never more than about twice
   * the live entries held.
   */
  compact(liveCount: number, isLive: (id: string, seq: number) => boolean): void {
    if (this.head >= 1024 && 2 * this.head >= this.ids.length) {
      this.ids = this.ids.slice(this.head);
      this.seqs = this.seqs.slice(this.head);
      this.head = 0;
    }
    if (this.ids.length - this.head <= 2 * liveCount + 64) {
      return;
    }
    const ids: string[] = [];
    const seqs: number[] = [];
    for (let i = this.head; i < this.ids.length; i++) {
      if (isLive(this.ids[i] as string, this.seqs[i] as number)) {
        ids.push(this.ids[i] as string);
        seqs.push(this.seqs[i] as number);
      }
    }
    this.ids = ids;
    this.seqs = seqs;
    this.head = 0;
  }
}
