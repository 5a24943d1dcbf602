// docs/protocol.md 7, [limits.fair-share] (issue 34, F4): costly anonymous calls spread over many addresses share one budget, while cheap calls are never refused; the budget's arithmetic on a clock the test moves (the same load against a real server, metered in real time: fair-share-spread.slow.test.ts).
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { WireError } from "../src/core/errors.js";
import { ClientBudget } from "../src/http/client-budget.js";
import { clientOf } from "../src/http/client-key.js";

const anonymous = (address: string) => clientOf("anonymous", address);
const LEGIT = anonymous("127.0.0.1");
const attackers = (count: number) => Array.from({ length: count }, (_, i) => anonymous(`127.0.0.${i + 2}`));

/** Whether `admit` let the call in; the 429 it throws otherwise, checked. */
function admitted(budget: ClientBudget, client: string): boolean {
  try {
    budget.admit(client);
    return true;
  } catch (error) {
    expect(error).toBeInstanceOf(WireError);
    const wire = error as WireError;
    expect(wire.status).toBe(429);
    expect(Number(wire.details.headers?.["Retry-After"])).toBeGreaterThanOrEqual(1);
    return false;
  }
}

/**
 * `rounds` turns of a server that answers one costly call (`costMs`, from the attackers in turn) and 40 cheap calls of
 * the legitimate client, its clock moving by the work done: how many costly calls got in, and the cheap client's
 * refusals.
 */
function replay(budget: ClientBudget, clock: { t: number }, from: string[], rounds: number, costMs = 20) {
  let costly = 0;
  let cheapRefused = 0;
  for (let round = 0; round < rounds; round++) {
    const attacker = from[round % from.length] as string;
    if (admitted(budget, attacker)) {
      costly++;
      clock.t += costMs;
      budget.charge(attacker, costMs, clock.t);
    } else {
      // A refusal costs the server next to nothing, but it takes a turn.
      clock.t += 0.05;
    }
    for (let call = 0; call < 40; call++) {
      if (admitted(budget, LEGIT)) {
        clock.t += 0.05;
        budget.charge(LEGIT, 0.05, clock.t);
      } else {
        cheapRefused++;
      }
    }
  }
  return { costly, cheapRefused };
}

const budgetOf = (clock: { t: number }) => new ClientBudget({ share: 0.25, burstMs: 250 }, () => clock.t);

describe("costly anonymous calls spread over addresses", () => {
  verifies(
    "limits.fair-share",
    "refuses the spread load once the addresses together pass one share, while the cheap client is never refused",
    () => {
      const clock = { t: 0 };
      const budget = budgetOf(clock);
      // 8 addresses in turn: each alone stays far under its own share (20 ms every 176 ms of work, 25 % of which
      // drains), so only a budget they share can hold them back.
      const spread = replay(budget, clock, attackers(8), 400);
      expect(spread.costly).toBeLessThan(400);
      expect(spread.cheapRefused).toBe(0);
    },
  );

  verifies("limits.fair-share", "gives 8 addresses no more of the server than 1 address gets", () => {
    const one = { t: 0 };
    const eight = { t: 0 };
    const alone = replay(budgetOf(one), one, attackers(1), 2_000);
    const spread = replay(budgetOf(eight), eight, attackers(8), 2_000);
    // The share of the server's time the costly calls took, out of all of it.
    const share = (costly: number, clock: { t: number }) => (costly * 20) / clock.t;
    expect(share(spread.costly, eight)).toBeLessThanOrEqual(share(alone.costly, one) * 1.1);
    expect(alone.cheapRefused + spread.cheapRefused).toBe(0);
  });

  verifies("limits.fair-share", "lets costly anonymous clients alone on the server use all of it", () => {
    const clock = { t: 0 };
    const budget = budgetOf(clock);
    const from = attackers(8);
    for (let round = 0; round < 400; round++) {
      const client = from[round % from.length] as string;
      expect(admitted(budget, client)).toBe(true);
      clock.t += 20;
      budget.charge(client, 20, clock.t);
    }
  });

  verifies(
    "limits.fair-share",
    "holds no principal to the anonymous budget, and no anonymous client of cheap calls",
    () => {
      const clock = { t: 0 };
      const budget = budgetOf(clock);
      replay(budget, clock, attackers(8), 200);
      // The shared budget is over: a principal's costly call, and a new address's cheap calls, still get in.
      const principal = "api-key:0";
      const newcomer = anonymous("127.0.1.1");
      for (let round = 0; round < 20; round++) {
        expect(admitted(budget, principal)).toBe(true);
        clock.t += 5;
        budget.charge(principal, 5, clock.t);
        expect(admitted(budget, newcomer)).toBe(true);
        clock.t += 0.05;
        budget.charge(newcomer, 0.05, clock.t);
      }
    },
  );

  verifies(
    "limits.fair-share",
    "never refuses an anonymous client alone on the server, whose calls go from cheap to costly and back",
    () => {
      // A busy machine makes every call dearer: one client's (a conformance run's) cheap stretches leave the
      // shared budget and its costly ones spend it. Its own cheap calls are no other client to be fair to.
      const clock = { t: 0 };
      const budget = budgetOf(clock);
      for (let round = 0; round < 100; round++) {
        for (const costMs of [...Array(10).fill(0.05), ...Array(10).fill(5)] as number[]) {
          expect(admitted(budget, LEGIT)).toBe(true);
          clock.t += costMs;
          budget.charge(LEGIT, costMs, clock.t);
        }
      }
      // Another client outside the shared budget arrives: the spent budget now holds the costly client back.
      const principal = "api-key:0";
      expect(admitted(budget, principal)).toBe(true);
      clock.t += 0.05;
      budget.charge(principal, 0.05, clock.t);
      expect(admitted(budget, LEGIT)).toBe(false);
    },
  );

  it("refuses an anonymous share out of range", () => {
    expect(() => new ClientBudget({ anonymousShare: 0 })).toThrow(/anonymousShare/);
    expect(() => new ClientBudget({ anonymousShare: 1.5 })).toThrow(/anonymousShare/);
  });
});
