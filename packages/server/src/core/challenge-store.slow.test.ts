// MemoryChallengeStore's cost per add, measured: amortized O(1) however many challenges it holds. Slow gate: a ratio of timed batches.
import { costGrowth } from "@otc/test-helpers/cost-growth";
import { describe, expect, it } from "vitest";
import { MemoryChallengeStore } from "./challenge-store.js";

const owner = (userId: string, principal = "anonymous") => ({ principal, userId });

describe("MemoryChallengeStore", () => {
  it("adds in time that does not grow with how many are held", async () => {
    const bound = { maxChallenges: 100_000, maxChallengesPerPrincipal: 100_000 };
    const { ratio, report } = await costGrowth({
      create: () => new MemoryChallengeStore(bound),
      add: (store, i) => store.add(`c${i}`, { owner: owner(`user-${i}`), scopes: [] }),
    });
    // Measured: about 2.5, a table of 50,000 being slower to reach than a fresh one's; a scan of the principal's
    // challenges per add made it 50.
    expect(ratio, report).toBeLessThan(10);
  });
});
