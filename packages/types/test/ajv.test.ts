// createAjv's options, row by row: formats checked, values left as they are, unknown keywords accepted, schemas by $id.
import { describe, expect, it } from "vitest";
import { createAjv } from "../src/ajv.js";
import { allSchemas, ToolIdSchema, ToolListResponseSchema } from "../src/index.js";

describe("createAjv", () => {
  it.each<[string, object, unknown, boolean]>([
    ["checks formats (email)", { type: "string", format: "email" }, "not an email", false],
    ["checks formats (date-time)", { type: "string", format: "date-time" }, "2026-01-01T00:00:00Z", true],
    ["checks formats (uri)", { type: "string", format: "uri" }, "no scheme", false],
    ["does not coerce a string to a number", { type: "integer" }, "1", false],
    ["does not coerce a number to a string", { type: "string" }, 1, false],
    ["does not coerce null to false", { type: "boolean" }, null, false],
    ["does not wrap a value in an array", { type: "array" }, "x", false],
    ["accepts keywords it does not know", { type: "string", "x-vendor": true, tsType: "Foo" }, "x", true],
    ["speaks JSON Schema 2020-12 (prefixItems)", { prefixItems: [{ type: "number" }], items: false }, [1, 2], false],
  ])("%s", (_what, schema, value, valid) => {
    expect(createAjv().validate(schema, value)).toBe(valid);
  });

  it("leaves the value as it is: no defaults written in, no properties removed", () => {
    const schema = {
      type: "object",
      properties: { a: { type: "number", default: 1 } },
      additionalProperties: false,
    };
    const value = { b: 2 };
    expect(createAjv().validate(schema, value)).toBe(false);
    expect(value).toEqual({ b: 2 });
  });

  it("reports the first error, or every error with allErrors", () => {
    const schema = { type: "object", required: ["a", "b", "c"] };
    const first = createAjv();
    first.validate(schema, {});
    expect(first.errors).toHaveLength(1);
    const all = createAjv({ allErrors: true });
    all.validate(schema, {});
    expect(all.errors).toHaveLength(3);
  });

  it("holds the schemas it is given, by $id, with the references between them", () => {
    const ajv = createAjv({ schemas: allSchemas });
    const validate = ajv.getSchema(ToolListResponseSchema.$id);
    // A ToolListResponse's items are ToolDefinitions, through a $ref to tool-definition.json.
    expect(validate?.({ items: [] })).toBe(true);
    expect(validate?.({ items: [{ id: "not a tool id" }] })).toBe(false);
    expect(ajv.getSchema(ToolIdSchema.$id)?.("Calculator.Add@1.0.0")).toBe(true);
  });
});
