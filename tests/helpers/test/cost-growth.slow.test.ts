// costGrowth tells a constant cost from one that grows with what is held, on structures whose cost is known. Slow gate: ratios of timed batches.
import { describe, expect, it } from "vitest";
import { costGrowth } from "../src/cost-growth.js";

describe("costGrowth", () => {
  it("finds about the same cost for a Map's set, however many it holds", async () => {
    const { ratio, report } = await costGrowth({
      create: () => new Map<string, number>(),
      add: (map, i) => void map.set(`k${i}`, i),
      // Batches of 3,000, as 1,000 sets take 0.1 to 0.3 ms, near the clock's grain (one CI run read 5.4 there).
      // 30,000 + 9 * 3,000 stays below 65,536, where the Map would grow its table inside a measured batch.
      held: 30_000,
      batch: 3_000,
    });
    expect(ratio, report).toBeLessThan(6);
  });

  it("finds a cost that grows with what is held: an array searched before each push", async () => {
    const { ratio, report } = await costGrowth({
      create: () => [] as string[],
      add: (list, i) => {
        if (!list.includes(`k${i}`)) {
          list.push(`k${i}`);
        }
      },
      // Smaller than the default, as the searches cost held squared: measured about 50, in half a second.
      held: 20_000,
      batch: 500,
    });
    expect(ratio, report).toBeGreaterThan(15);
  }, 30_000);
});
