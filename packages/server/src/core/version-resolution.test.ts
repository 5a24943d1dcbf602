// Table tests of tool id parsing and version resolution (docs/protocol.md 3.4).
import { describe, expect, it } from "vitest";
import { compareVersions, parseToolId, resolveVersion } from "./version-resolution.js";

const AVAILABLE = ["1.0.0", "1.2.0", "1.9.0", "1.10.0", "2.0.0", "10.0.0"];

describe("resolveVersion", () => {
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
    if (!request) throw new Error("did not parse");
    expect(resolveVersion(AVAILABLE, request)).toBe(expected);
  });

  it("picks the highest of one version", () => {
    expect(resolveVersion(["0.1.2"], { qualifiedName: "A.B", kind: "latest" })).toBe("0.1.2");
    expect(resolveVersion([], { qualifiedName: "A.B", kind: "latest" })).toBeUndefined();
  });
});

describe("parseToolId", () => {
  it.each([
    ["Calculator.Add", { qualifiedName: "Calculator.Add", kind: "latest" }],
    ["Calculator.Add@1", { qualifiedName: "Calculator.Add", kind: "major", version: "1" }],
    ["Calculator.Add@1.2.3", { qualifiedName: "Calculator.Add", kind: "exact", version: "1.2.3" }],
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
    ["Calculator.Add@123456789.0.0", { qualifiedName: "Calculator.Add", kind: "exact", version: "123456789.0.0" }],
    [`Calculator.${"A".repeat(246)}`, undefined],
  ])("%j -> %j", (toolId, expected) => {
    expect(parseToolId(toolId)).toEqual(expected);
  });

  it("refuses an id over the spec's 256 characters before reading it, whatever it holds", () => {
    expect(parseToolId(`Greeting.Hello@${"9".repeat(1_040_000)}`)).toBeUndefined();
    expect(parseToolId(`Greeting.Hello@1.0.${"0".repeat(241)}`)).toBeUndefined();
    expect(parseToolId(`Greeting.${"H".repeat(241)}@1.0.0`)).toMatchObject({ kind: "exact" });
  });
});

describe("compareVersions", () => {
  it.each([
    ["1.10.0", "1.9.0", 1],
    ["1.9.0", "1.10.0", -1],
    ["2.0.0", "10.0.0", -1],
    ["1.0.0", "1.0.0", 0],
    ["99999999999999999999.0.0", "99999999999999999998.0.0", 1],
  ])("%s vs %s is %i", (a, b, sign) => {
    expect(Math.sign(compareVersions(a, b))).toBe(sign);
  });
});
