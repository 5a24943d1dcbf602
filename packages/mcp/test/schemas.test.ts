// Schema and name conversions both ways: MCP's object-only schemas, OXP's self-contained ones, names valid and unique on each side.
import { describe, expect, it } from "vitest";
import { catalogToMcpTools, TOOL_ID_META_KEY } from "../src/bridge.js";
import { MCP_TOOL_NAME, mcpToolName, OXP_NAME, oxpToolName } from "../src/names.js";
import {
  inlineRefs,
  SchemaConversionError,
  toMcpInputSchema,
  toMcpOutput,
  toOxpInputSchema,
  toOxpOutputSchema,
} from "../src/schemas.js";

const definition = (id: string, overrides: Record<string, unknown> = {}) => {
  const [name = "", version = ""] = id.split("@");
  return {
    id,
    name: name.replace(".", "_"),
    description: `The ${name} tool.`,
    version,
    input_schema: {},
    output_schema: {},
    ...overrides,
  };
};

describe("OXP to MCP", () => {
  it("gives `{}` input a type, and drops $schema", () => {
    expect(toMcpInputSchema({})).toEqual({ type: "object" });
    expect(toMcpInputSchema({ $schema: "https://json-schema.org/draft/2020-12/schema", properties: {} })).toEqual({
      type: "object",
      properties: {},
    });
  });

  it("keeps object output schemas, wraps every other one as { value }, and declares none for null", () => {
    const object = { type: "object", properties: { a: { type: "string" } } };
    expect(toMcpOutput(object)).toEqual({ outputSchema: object, wrapped: false });
    expect(toMcpOutput({ type: "number" })).toEqual({
      outputSchema: {
        type: "object",
        properties: { value: { type: "number" } },
        required: ["value"],
        additionalProperties: false,
      },
      wrapped: true,
    });
    expect(toMcpOutput({}).wrapped).toBe(true);
    expect(toMcpOutput({ type: ["object", "null"] }).wrapped).toBe(true);
    expect(toMcpOutput(null)).toEqual({ outputSchema: undefined, wrapped: false });
  });

  it("names tools Toolkit_Tool, older versions with a suffix, at most 64 characters and unique", () => {
    expect(mcpToolName("Calculator", "Add")).toBe("Calculator_Add");
    expect(mcpToolName("Calculator", "Add", "1.0.0")).toBe("Calculator_Add_v1_0_0");
    const long = "T".repeat(80);
    const catalog = catalogToMcpTools(
      [
        definition("Greeting.Hello@1.0.0"),
        definition("Greeting.Hello@2.0.0"),
        definition("Greeting.Hello@10.0.0"),
        // Two ids that make the same name.
        definition("A_B.C@1.0.0"),
        definition("A.B_C@1.0.0"),
        definition(`${long}.X@1.0.0`),
        definition(`${long}.Y@1.0.0`),
      ] as never,
      "all",
    );
    const names = [...catalog.keys()];
    for (const name of names) {
      expect(name).toMatch(MCP_TOOL_NAME);
    }
    expect(new Set(names).size).toBe(7);
    // Numeric version order: 10.0.0 is the latest.
    expect(catalog.get("Greeting_Hello")?.tool._meta?.[TOOL_ID_META_KEY]).toBe("Greeting.Hello@10.0.0");
    expect(catalog.get("Greeting_Hello_v2_0_0")?.definition.id).toBe("Greeting.Hello@2.0.0");
    expect(catalog.get("A_B_C")?.definition.id).toBe("A.B_C@1.0.0");
    expect(catalog.get("A_B_C_2")?.definition.id).toBe("A_B.C@1.0.0");
    expect(names.filter((name) => name.startsWith("TTTT")).every((name) => name.length === 64)).toBe(true);
  });

  it("lists only the latest versions by default", () => {
    const catalog = catalogToMcpTools([definition("G.H@1.0.0"), definition("G.H@1.1.0")] as never);
    expect([...catalog.keys()]).toEqual(["G_H"]);
    expect(catalog.get("G_H")?.definition.version).toBe("1.1.0");
  });
});

describe("MCP to OXP", () => {
  it("names tools in PascalCase from the MCP name's words, within OXP's alphabet", () => {
    expect(oxpToolName("get-sum")).toBe("GetSum");
    expect(oxpToolName("fs.read_file")).toBe("FsReadFile");
    expect(oxpToolName("echo")).toBe("Echo");
    expect(oxpToolName("--")).toBe("Tool");
    for (const name of ["a-b", "x.y/z", "ünïcode", "9lives"]) {
      expect(oxpToolName(name)).toMatch(OXP_NAME);
    }
  });

  it("inlines local $refs, $defs and definitions, with sibling keywords", () => {
    const schema = {
      type: "object",
      properties: {
        home: { $ref: "#/$defs/Address", description: "Where they live." },
        work: { $ref: "#/definitions/Office" },
      },
      $defs: { Address: { type: "object", properties: { zip: { $ref: "#/$defs/Zip" } } }, Zip: { type: "string" } },
      definitions: { Office: { $ref: "#/$defs/Address" } },
    };
    expect(inlineRefs(schema)).toEqual({
      type: "object",
      properties: {
        home: { type: "object", properties: { zip: { type: "string" } }, description: "Where they live." },
        work: { type: "object", properties: { zip: { type: "string" } } },
      },
    });
  });

  it("leaves $ref inside data alone (enum, const, default)", () => {
    const schema = { type: "object", properties: { a: { const: { $ref: "#/x" }, description: "d" } } };
    expect(inlineRefs(schema)).toEqual(schema);
  });

  it("refuses recursive, remote and dynamic references", () => {
    const tree = {
      type: "object",
      properties: { node: { $ref: "#/$defs/Node" } },
      $defs: { Node: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/Node" } } } } },
    };
    expect(() => inlineRefs(tree)).toThrow(/recursive/);
    expect(() => inlineRefs({ properties: { a: { $ref: "https://example.com/a.json" } } })).toThrow(
      SchemaConversionError,
    );
    expect(() => inlineRefs({ $dynamicRef: "#meta" })).toThrow(SchemaConversionError);
  });

  it("describes every top-level property, drops $schema, and requires an object", () => {
    const converted = toOxpInputSchema({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { a: { type: "number" }, b: { type: "string", description: "B." } },
    });
    expect(converted).toEqual({
      type: "object",
      properties: { a: { type: "number", description: "The a parameter." }, b: { type: "string", description: "B." } },
    });
    expect(toOxpInputSchema(undefined)).toEqual({ type: "object" });
    expect(() => toOxpInputSchema({ type: "string" })).toThrow(SchemaConversionError);
  });

  it("falls back to `{}` for an output schema it cannot inline", () => {
    expect(toOxpOutputSchema(undefined)).toEqual({});
    expect(toOxpOutputSchema({ $ref: "#" })).toEqual({});
    expect(toOxpOutputSchema({ type: "object", properties: { n: { type: "number" } } })).toEqual({
      type: "object",
      properties: { n: { type: "number" } },
    });
  });
});
