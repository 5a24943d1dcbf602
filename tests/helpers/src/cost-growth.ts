// Whether an operation's cost grows with how much a structure holds, judged without a wall clock's noise: batches into a
// full structure and into a fresh one, interleaved, in CPU time, on the same heap.

/** What {@link costGrowth} measures. */
export interface CostGrowthOptions<T> {
  /** A new, empty structure. */
  create(): T;
  /** The operation: adds item `i` to `target` (`i` is unique across the whole measure); what it returns is awaited. */
  add(target: T, i: number): unknown;
  /** How many items the full structure holds before its first measured batch. Default 50,000. */
  held?: number;
  /** Items per measured batch. Default 1,000. */
  batch?: number;
  /** Batches measured on each structure. Default 9. */
  rounds?: number;
}

/** What {@link costGrowth} found. */
export interface CostGrowth {
  /** The cheapest batch into the full structure over the cheapest into a fresh one: about 1 for a constant cost. */
  ratio: number;
  /** The figures, for an assertion's message. */
  report: string;
}

/**
 * Measures `add` into a structure holding `held` items against `add` into a fresh one, a batch of each in turn.
 *
 * Compared with the first and last batches of one growing structure, this holds still what a busy machine varies:
 * both sides run at the same moments, on the same heap (the full structure stays alive during the fresh one's
 * batches, so the collector's work is alike), and each side is its cheapest batch, so one collection or one
 * preemption does not decide. Work that scans what is held makes the ratio about `2 * held / batch` (100 by default).
 */
export async function costGrowth<T>(options: CostGrowthOptions<T>): Promise<CostGrowth> {
  const { create, add, held = 50_000, batch = 1_000, rounds = 9 } = options;
  let next = 0;
  const full = create();
  while (next < held) {
    await add(full, next++);
  }
  const timed = async (target: T) => {
    const started = process.cpuUsage();
    for (const end = next + batch; next < end; ) {
      await add(target, next++);
    }
    const spent = process.cpuUsage(started);
    return (spent.user + spent.system) / 1000;
  };
  const fresh: number[] = [];
  const loaded: number[] = [];
  for (let round = 0; round < rounds; round++) {
    fresh.push(await timed(create()));
    loaded.push(await timed(full));
  }
  const ratio = Math.min(...loaded) / Math.min(...fresh);
  const ms = (batches: number[]) => batches.map((spent) => spent.toFixed(1)).join(", ");
  return {
    ratio,
    report: `batches of ${batch} (CPU ms) into a fresh structure: ${ms(fresh)}; holding ${held}+: ${ms(loaded)}; ratio ${ratio.toFixed(2)}`,
  };
}
