// Unit tests of the CLI's pure parts: type names for bindings, the tools table, and usage errors.
import type { ToolDefinition } from "@otc/types";
import { describe, expect, it } from "vitest";
import { EXIT, formatTools, run } from "./cli.js";
import { generateBindings, typeNameOf } from "./codegen.js";

const tool = (id: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  id,
  name: (id.split("@")[0] ?? "").replace(".", "_"),
  description: `The ${id} tool.\nMore lines.`,
  version: id.split("@")[1] ?? "",
  input_schema: {},
  output_schema: null,
  ...extra,
});

describe("typeNameOf", () => {
  it.each([
    ["Calculator.Add@1.0.0", "CalculatorAddV1_0_0"],
    ["my_kit.do_it@10.2.3", "MyKitDoItV10_2_3"],
  ])("%s -> %s", (id, name) => {
    expect(typeNameOf(id)).toBe(name);
  });
});

describe("formatTools", () => {
  it("groups by toolkit, lists versions, shows the first description line and requirements", () => {
    const text = formatTools([
      tool("B.Two@1.0.0"),
      tool("A.One@1.0.0", { requirements: { secrets: [{ id: "K" }], user_id: true } }),
      tool("A.One@2.0.0", { requirements: { secrets: [{ id: "K" }] } }),
    ]);
    expect(text).toBe(
      "A\n  One              1.0.0, 2.0.0   The A.One@2.0.0 tool.  [needs secret:K]\nB\n  Two              1.0.0          The B.Two@1.0.0 tool.\n",
    );
  });
});

describe("generateBindings", () => {
  it("types null outputs as null and {} outputs as unknown, deterministically", async () => {
    const tools = [tool("A.Nothing@1.0.0"), tool("A.Anything@1.0.0", { output_schema: {} })];
    const code = await generateBindings(tools, "x.json");
    expect(code).toContain("export type ANothingV1_0_0Output = null;");
    expect(code).toContain("export type AAnythingV1_0_0Output = unknown;");
    expect(await generateBindings([...tools].reverse(), "x.json")).toBe(code);
  });
});

describe("run", () => {
  it("exits 2 without a command, printing the help to stderr", async () => {
    let err = "";
    const code = await run([], { stdout: () => {}, stderr: (text) => (err += text), env: {} });
    expect(code).toBe(EXIT.usage);
    expect(err).toContain("Usage:");
  });
});
