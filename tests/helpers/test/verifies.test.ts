// verifies: the test it declares carries the rule ids in its name and runs as `it` would (timeout, options, table rows).
import { describe, expect, expectTypeOf, it } from "vitest";
import { testName, verifies } from "../src/verifies.js";

// These ids are no rules of docs/protocol.md: the requirements check leaves this file out (scripts/requirements).
describe("verifies", () => {
  verifies("example.one", "names the rule after the test", ({ task }) => {
    expect(task.name).toBe("names the rule after the test [example.one]");
  });

  verifies(["example.one", "example.two"], "names every rule", ({ task }) => {
    expect(task.name).toBe("names every rule [example.one, example.two]");
  });

  verifies(
    "example.one",
    "passes a timeout on",
    ({ task }) => {
      expect(task.timeout).toBe(301_234);
    },
    301_234,
  );

  verifies("example.one", "passes options on", { timeout: 304_321 }, ({ task }) => {
    expect(task.timeout).toBe(304_321);
  });

  verifies.each([
    ["one", 1],
    ["two", 2],
  ])("example.one", "spreads the row %s into the arguments", (name, number) => {
    expect(expect.getState().currentTestName).toBe(
      `verifies > spreads the row ${name} into the arguments [example.one]`,
    );
    expectTypeOf(number).toEqualTypeOf<number>();
  });

  verifies.each(["1.0", "1"])("example.one", "passes a row that is no array as is: %s", (version) => {
    expect(["1.0", "1"]).toContain(version);
  });

  verifies.each([{ version: "1.0" }])(
    "example.one",
    "passes options on for each row",
    { timeout: 305_678 },
    ({ version }) => {
      expect(version).toBe("1.0");
      expect(expect.getState().currentTestName).toBe("verifies > passes options on for each row [example.one]");
    },
  );
});

describe("testName", () => {
  it.each([
    ["a.b", "x", "x [a.b]"],
    [["a.b", "c-d.e"] as const, "x %s", "x %s [a.b, c-d.e]"],
  ] as const)("%j, %s -> %s", (rules, name, want) => {
    expect(testName(rules, name)).toBe(want);
  });
});

describe("the types of verifies", () => {
  it("take one rule id or more, and the test's function", () => {
    // Declared, never called: tsc checks the calls, and no test is registered.
    const declare = () => {
      // @ts-expect-error: a test verifies one rule at least.
      verifies([], "verifies nothing", () => {});
      // @ts-expect-error: the rule ids come first.
      verifies("names no rule", () => {});
      // @ts-expect-error: a row of strings gives the function strings.
      verifies.each([["1.0"]])("example.one", "x", (version: number) => expect(version).toBe(1));
    };
    expectTypeOf(declare).returns.toBeVoid();
  });
});
