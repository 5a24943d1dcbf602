// Table tests of tool id parsing, writing and version resolution (docs/protocol.md 3.4).
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import {
  compareToolVersions,
  formatToolId,
  type ParsedToolId,
  parseToolId,
  requestedToolVersion,
  resolveToolVersion,
} from "../src/index.js";

const AVAILABLE = ["1.0.0", "1.2.0", "1.9.0", "1.10.0", "2.0.0", "10.0.0"];

describe("resolveToolVersion", () => {
  it.each<[string, string | undefined]>([
    ["Tk.Tool", "10.0.0"],
    ["Tk.Tool@1.0.0", "1.0.0"],
    ["Tk.Tool@1.10.0", "1.10.0"],
    ["Tk.Tool@1", "1.0.0"],
    ["Tk.Tool@2", "2.0.0"],
    ["Tk.Tool@10", "10.0.0"],
    ["Tk.Tool@3", undefined],
    ["Tk.Tool@1.1.0", undefined],
    ["Tk.Tool@0", undefined],
  ])("%s -> %s", (toolId, expected) => {
    const request = parseToolId(toolId);
    if (!request) {
      throw new Error("did not parse");
    }
    expect(resolveToolVersion(AVAILABLE, request)).toBe(expected);
  });

  it("picks the highest of one version, and nothing of none", () => {
    expect(resolveToolVersion(["0.1.2"], { kind: "latest" })).toBe("0.1.2");
    expect(resolveToolVersion([], { kind: "latest" })).toBeUndefined();
  });
});

describe("requestedToolVersion", () => {
  it.each<[ParsedToolId["kind"], string | undefined, string | undefined]>([
    ["exact", "1.2.3", "1.2.3"],
    ["major", "2", "2.0.0"],
    ["latest", undefined, undefined],
  ])("%s %s -> %s", (kind, version, expected) => {
    expect(requestedToolVersion({ kind, version })).toBe(expected);
  });
});

describe("parseToolId", () => {
  const add = { toolkit: "Calculator", tool: "Add", qualifiedName: "Calculator.Add" };
  it.each<[string, ParsedToolId | undefined]>([
    ["Calculator.Add", { ...add, kind: "latest" }],
    ["Calculator.Add@1", { ...add, kind: "major", version: "1" }],
    ["Calculator.Add@1.2.3", { ...add, kind: "exact", version: "1.2.3" }],
    [
      "my_kit.do_it@0",
      { toolkit: "my_kit", tool: "do_it", qualifiedName: "my_kit.do_it", kind: "major", version: "0" },
    ],
    ["Calculator.Add@1.0", undefined],
    ["Calculator.Add@", undefined],
    ["Calculator", undefined],
    ["Calc.Add.Sub", undefined],
    ["Calc ulator.Add", undefined],
    ["", undefined],
    ["Calculator.Add@01", undefined],
    ["Calculator.Add@1.00.0", undefined],
    ["Calculator.Add@01.0.0", undefined],
    ["Calculator.Add@1234567890", undefined],
    ["Calculator.Add@123456789.0.0", { ...add, kind: "exact", version: "123456789.0.0" }],
    [`Calculator.${"A".repeat(246)}`, undefined],
  ])("%j -> %j", (toolId, expected) => {
    expect(parseToolId(toolId)).toEqual(expected);
  });

  verifies(
    "limits.identifier-length",
    "refuses an id over the spec's 256 characters before reading it, whatever it holds",
    () => {
      expect(parseToolId(`Greeting.Hello@${"9".repeat(1_040_000)}`)).toBeUndefined();
      expect(parseToolId(`Greeting.Hello@1.0.${"0".repeat(241)}`)).toBeUndefined();
      expect(parseToolId(`Greeting.${"H".repeat(241)}@1.0.0`)).toMatchObject({ kind: "exact" });
    },
  );
});

describe("formatToolId", () => {
  it.each<[Parameters<typeof formatToolId>[0], string]>([
    [{ toolkit: "Calculator", tool: "Add" }, "Calculator.Add"],
    [{ toolkit: "Calculator", tool: "Add", version: "1" }, "Calculator.Add@1"],
    [{ toolkit: "Calculator", tool: "Add", version: "1.0.0" }, "Calculator.Add@1.0.0"],
  ])("%j -> %s", (parts, expected) => {
    expect(formatToolId(parts)).toBe(expected);
  });

  it.each(["Calculator.Add", "Calculator.Add@1", "Calculator.Add@1.2.3"])(
    "writes back what parseToolId read: %s",
    (id) => {
      expect(formatToolId(parseToolId(id) as ParsedToolId)).toBe(id);
    },
  );
});

describe("compareToolVersions", () => {
  it.each([
    ["1.10.0", "1.9.0", 1],
    ["1.9.0", "1.10.0", -1],
    ["2.0.0", "10.0.0", -1],
    ["1.0.0", "1.0.0", 0],
    ["99999999999999999999.0.0", "99999999999999999998.0.0", 1],
  ])("%s vs %s is %i", (a, b, sign) => {
    expect(Math.sign(compareToolVersions(a, b))).toBe(sign);
  });
});
