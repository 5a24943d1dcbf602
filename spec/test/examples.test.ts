// Validates every file of spec/examples against its schema: valid ones pass, invalid ones fail.
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { createSpecAjv, loadExamples, loadSchemaFiles } from "../index.js";

const schemas = loadSchemaFiles();
const examples = loadExamples();
const ajv = createSpecAjv();
const idByTitle = new Map(schemas.map((entry) => [entry.title, entry.id]));

describe("spec/examples", () => {
  it("are filed under the title of an existing schema", () => {
    const unknown = [...new Set(examples.map((example) => example.schemaName))].filter((name) => !idByTitle.has(name));
    expect(unknown).toEqual([]);
  });

  it("cover every schema with at least one valid and one invalid example", () => {
    for (const { title } of schemas) {
      const mine = examples.filter((example) => example.schemaName === title);
      expect(
        mine.some((example) => example.valid),
        `${title} has a valid example`,
      ).toBe(true);
      expect(
        mine.some((example) => !example.valid),
        `${title} has an invalid example`,
      ).toBe(true);
    }
  });

  verifies.each(examples.map((example) => [example.file, example] as const))(
    [
      "response.exactly-one-outcome",
      "response.no-extra-properties",
      "request.flat-shape",
      "spec.response-branches-closed",
      "spec.requirement-items-required",
      "spec.closed-bodies",
      "definitions.fields",
      "definitions.name-pattern",
      "definitions.input-schema-flat",
      "definitions.self-contained",
      "definitions.id-and-version",
    ],
    "%s",
    (_file, example) => {
      const validate = ajv.getSchema(idByTitle.get(example.schemaName) ?? "");
      if (!validate) {
        throw new Error(`no schema titled ${example.schemaName}`);
      }
      const ok = validate(example.body);
      if (example.valid) {
        expect(validate.errors ?? [], "a valid example passes").toEqual([]);
      }
      expect(ok).toBe(example.valid);
    },
  );
});
