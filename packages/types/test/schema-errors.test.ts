// The one formatting of schema errors: `path message`, joined with `; `, cut at `max`.
import { describe, expect, it } from "vitest";
import { formatSchemaErrors, type SchemaError, validateCallToolRequest } from "../src/index.js";

const errors: SchemaError[] = [
  { instancePath: "", message: "must have required property 'tool_id'" },
  { instancePath: "/input", message: "must be object" },
  { instancePath: "/context/user_id" },
];

describe("formatSchemaErrors", () => {
  it.each<[Parameters<typeof formatSchemaErrors>[1], string]>([
    [undefined, "(value) must have required property 'tool_id'; /input must be object; /context/user_id is invalid"],
    [{ root: "(body)", max: 2 }, "(body) must have required property 'tool_id'; /input must be object"],
    [{ prefix: "body", max: 1 }, "body must have required property 'tool_id'"],
    [{ prefix: "body", max: 0 }, ""],
  ])("%j", (options, expected) => {
    expect(formatSchemaErrors(errors, options)).toBe(expected);
  });

  it("takes a validator's errors as they are, null included", () => {
    expect(validateCallToolRequest({ tool_id: 1 })).toBe(false);
    expect(formatSchemaErrors(validateCallToolRequest.errors)).toBe("/tool_id must be string");
    expect(formatSchemaErrors(null)).toBe("");
  });
});
