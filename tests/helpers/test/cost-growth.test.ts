// costGrowth runs each side's batches on a structure of its own (whether it tells a constant cost from a growing one: cost-growth.slow.test.ts).
import { describe, expect, it } from "vitest";
import { costGrowth } from "../src/cost-growth.js";

describe("costGrowth", () => {
  it("runs each side's batches on its own structure: the full one keeps everything it was given", async () => {
    const structures: Set<number>[] = [];
    await costGrowth({
      create: () => {
        const set = new Set<number>();
        structures.push(set);
        return set;
      },
      add: (set, i) => void set.add(i),
      held: 100,
      batch: 10,
      rounds: 3,
    });
    expect(structures.map((set) => set.size)).toEqual([130, 10, 10, 10]);
  });
});
