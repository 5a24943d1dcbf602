// Tests that name the rules of docs/protocol.md they verify: the requirements check reads the ids, and vitest shows them in the test's name.
import { it, type TestFunction, type TestOptions } from "vitest";

type Awaitable<T> = T | PromiseLike<T>;

/** The id of one rule of docs/protocol.md (`call.input-422`), or of several. */
export type RuleIds = string | readonly [string, ...string[]];

/** What a test takes besides its function, as `it(name, options, fn)` does. */
export type VerifiesOptions = Omit<TestOptions, "shuffle">;

/** `verifies(rules, name, fn)`: one test; `verifies.each(table)(rules, name, fn)`: one per row. */
export interface Verifies {
  (rules: RuleIds, name: string, fn: TestFunction, timeout?: number): void;
  (rules: RuleIds, name: string, options: VerifiesOptions, fn: TestFunction): void;
  /** A test per row, as `it.each`: an array row is spread into the function's arguments, anything else is passed as is. */
  each<Row extends readonly unknown[] | []>(table: readonly Row[]): VerifiesEach<[...Row]>;
  each<Row>(table: readonly Row[]): VerifiesEach<[Row]>;
}

/** `verifies.each(table)`: takes the rules, the name (with `it.each`'s `%s` placeholders) and the function. */
export interface VerifiesEach<Args extends unknown[]> {
  (rules: RuleIds, name: string, fn: (...args: Args) => Awaitable<void>, timeout?: number): void;
  (rules: RuleIds, name: string, options: VerifiesOptions, fn: (...args: Args) => Awaitable<void>): void;
}

/**
 * The name vitest shows for a test that verifies `rules`: its own name, then the ids in brackets.
 *
 * @example
 * testName(["call.input-422", "limits.body-values"], "answers a wrong input with a 422");
 * // "answers a wrong input with a 422 [call.input-422, limits.body-values]"
 */
export function testName(rules: RuleIds, name: string): string {
  return `${name} [${typeof rules === "string" ? rules : rules.join(", ")}]`;
}

/**
 * Declares a test that verifies the rules `rules` of docs/protocol.md, as `it(name, fn)` does, its name
 * followed by the ids. The rule ids are a string or an array literal: scripts/requirements reads them
 * from the source, and fails when a rule is verified by no test or a test names an unknown rule.
 *
 * @example
 * verifies("call.input-422", "answers a wrong input with a 422", async () => {
 *   expect((await callTool(baseUrl, { tool_id: "Calculator.Add@1.0.0", input: {} })).status).toBe(422);
 * });
 * verifies.each([["1.0"], ["1"]])("versions.header-optional", "accepts OXP-Version %s", async (version) => {
 *   // ...
 * });
 */
export const verifies: Verifies = Object.assign(
  (rules: RuleIds, name: string, ...rest: unknown[]) => (it as Declare)(testName(rules, name), ...rest),
  {
    each:
      (table: readonly unknown[]) =>
      (rules: RuleIds, name: string, ...rest: unknown[]) =>
        (it.each(table) as Declare)(testName(rules, name), ...rest),
  },
);

// `it` and `it.each(table)` take `(name, fn, timeout?)` and `(name, options, fn)` alike, and `Verifies`
// types both forms: what follows the name passes through as it came.
type Declare = (name: string, ...rest: unknown[]) => void;
