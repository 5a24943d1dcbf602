// Which gate a vitest run belongs to: `npm test` runs every test but the slow ones (`*.slow.test.ts`, whose point is real time or load), `npm run test:slow` runs only those; and the time limits that guard both against a hang.
import { configDefaults } from "vitest/config";

/** Whether this run is the slow gate: the package's `test:slow` script sets `OTC_TEST_GATE=slow`. */
export const SLOW_GATE = process.env.OTC_TEST_GATE === "slow";

/** The files of the slow gate: soak, slowloris, cost-growth ratios, benches, kill-and-wait faults. */
export const SLOW_TESTS = "**/*.slow.test.ts";

/**
 * The test files of this run among `include`: the slow ones alone in the slow gate, every other one in `npm test`.
 *
 * @example
 * test: { ...gateFiles(["test/**\/*.test.ts"]) }
 */
export function gateFiles(include: readonly string[], exclude: readonly string[] = []) {
  return SLOW_GATE
    ? {
        include: include.map((pattern) => pattern.replace(/\.test\.ts$/, ".slow.test.ts")),
        exclude: [...configDefaults.exclude, ...exclude],
      }
    : { include: [...include], exclude: [...configDefaults.exclude, ...exclude, SLOW_TESTS] };
}

/**
 * Time limits of a test, of a hook and of `expect.poll`. In `npm test` they only stop a hang: no test there waits on the wall clock for
 * its logic, so a busy machine makes a test slower, never wrong, and a limit must not turn slowness into a failure.
 */
export const GATE_TIMEOUTS = {
  testTimeout: 300_000,
  hookTimeout: 300_000,
  // expect.poll's own default gives up after 1 s: a condition that takes longer on a busy machine is not wrong.
  expect: { poll: { timeout: 60_000 } },
} as const;
