// The demo provider's cost of starting a challenge, measured: it does not grow with how many it holds. Slow gate: a ratio of timed batches.
import { MemoryTokenStore, type StartChallengeInput, type TokenOwner } from "@otc/server";
import { costGrowth } from "@otc/test-helpers/cost-growth";
import { describe, expect, it } from "vitest";
import { DemoGoogleProvider } from "../src/google-provider.js";

describe("DemoGoogleProvider bounds", () => {
  const tokens = new MemoryTokenStore();
  let next = 0;
  const input = (owner: TokenOwner): StartChallengeInput => ({
    challengeId: `google.test-${next++}`,
    owner,
    scopes: ["s"],
    baseUrl: "http://demo.test",
    tokens,
  });

  it("starts challenges in time that does not grow with how many are held", async () => {
    const { ratio, report } = await costGrowth({
      create: () => new DemoGoogleProvider({ maxChallenges: 100_000, maxChallengesPerPrincipal: 100_000 }),
      add: (provider, i) => provider.startChallenge(input({ principal: "anonymous", userId: `user-${i}` })),
    });
    // Measured: about 1.3 (each challenge's random token dwarfs the store's part); a scan of the principal's challenges
    // per add in the store made it 15.
    expect(ratio, report).toBeLessThan(5);
  });
});
