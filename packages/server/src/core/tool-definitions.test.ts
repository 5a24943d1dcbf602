// Definitions refused at start-up for what they would make a client do: references at any depth, generator extensions.
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect } from "vitest";
import { ServerConfigError } from "./errors.js";
import { OxpCore } from "./oxp-core.js";
import type { Tool } from "./tool.js";

/** A tool with the given schemas; every top-level input property is described, as the spec asks. */
const tool = (inputSchema: object, outputSchema: object | null = {}): Tool => ({
  toolkit: "Test",
  name: "Tool",
  version: "1.0.0",
  description: "A tool for tests.",
  requirements: undefined,
  timeoutMs: undefined,
  inputSchema: inputSchema as Tool["inputSchema"],
  outputSchema: outputSchema as Tool["outputSchema"],
  run: () => null,
});

const input = (a: object) => ({ type: "object", properties: { a: { description: "A.", ...a } } });

describe("tool definitions a server refuses at start-up (docs/protocol.md 6)", () => {
  verifies.each<[string, Tool, string, string]>([
    [
      "a $ref deep in anyOf",
      tool(input({ items: { anyOf: [{ $ref: "#/x" }] } })),
      "input_schema",
      "/properties/a/items/anyOf/0/$ref",
    ],
    [
      "a $dynamicRef in the output",
      tool({}, { type: "object", properties: { b: { $dynamicRef: "#x" } } }),
      "output_schema",
      "/properties/b/$dynamicRef",
    ],
    [
      "a $recursiveRef",
      tool(input({ not: { $recursiveRef: "#" } })),
      "input_schema",
      "/properties/a/not/$recursiveRef",
    ],
    ["$defs in a property", tool(input({ $defs: { x: {} } })), "input_schema", "/properties/a/$defs"],
    [
      "definitions inside allOf",
      tool({}, { allOf: [{ definitions: { x: {} } }] }),
      "output_schema",
      "/allOf/0/definitions",
    ],
    [
      "a $ref inside an enum's data",
      tool(input({ enum: [{ $ref: "/etc/passwd" }] })),
      "input_schema",
      "/properties/a/enum/0/$ref",
    ],
    [
      "a $ref inside a default",
      tool(input({ default: { x: [{ $ref: "http://127.0.0.1:9/" }] } })),
      "input_schema",
      "/properties/a/default/x/0/$ref",
    ],
    [
      "a $dynamicRef inside examples",
      tool({}, { examples: [{ $dynamicRef: "#a" }] }),
      "output_schema",
      "/examples/0/$dynamicRef",
    ],
  ])(
    ["definitions.self-contained", "definitions.refused-at-start"],
    "refuses %s, at any depth",
    (_case, definition, field, at) => {
      const build = () => new OxpCore({ tools: [definition] });
      expect(build).toThrow(ServerConfigError);
      expect(build).toThrow(`Tool 'Test.Tool@1.0.0' is refused: ${field} must be self-contained, but has ${at}`);
    },
  );

  verifies.each<[string, Tool, string]>([
    [
      "tsType",
      tool(input({ type: "string", tsType: 'string; } import("node:fs")' })),
      "input_schema at /properties/a/tsType",
    ],
    ["tsEnumNames", tool(input({ enum: ["x"], tsEnumNames: ["X"] })), "input_schema at /properties/a/tsEnumNames"],
    [
      "any ts keyword deep in the output",
      tool({}, { items: { oneOf: [{ tsFuture: 1 }] } }),
      "output_schema at /items/oneOf/0/tsFuture",
    ],
  ])(
    ["definitions.no-codegen-extensions", "definitions.refused-at-start"],
    "refuses the code generator keyword %s",
    (_case, definition, where) => {
      const build = () => new OxpCore({ tools: [definition] });
      expect(build).toThrow(ServerConfigError);
      const [field, at] = where.split(" at ");
      expect(build).toThrow(
        `Tool 'Test.Tool@1.0.0' is refused: ${field} uses a code generator's extension keyword, which no server publishes, at ${at}`,
      );
    },
  );

  verifies(
    ["definitions.self-contained", "definitions.no-codegen-extensions"],
    "accepts those words where they are names or data, not keywords",
    () => {
      const definition = tool(
        {
          type: "object",
          properties: {
            $ref: { type: "string", description: "A property named $ref." },
            tsType: { type: "string", description: "A property named tsType.", default: "tsType" },
            c: {
              description: "Data that mentions $defs and tsType.",
              const: { $defs: 1, tsType: "x", definitions: [] },
            },
          },
        },
        { type: "object", properties: { tsEnumNames: { type: "string" } }, required: ["tsEnumNames", "$ref"] },
      );
      expect(new OxpCore({ tools: [definition] }).listTools().items[0]?.input_schema).toMatchObject({
        properties: { $ref: { type: "string" } },
      });
    },
  );
});
