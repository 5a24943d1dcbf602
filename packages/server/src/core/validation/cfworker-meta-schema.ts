/** Refuses a tool schema that is not valid draft 2020-12, checked by @cfworker/json-schema against the very meta-schemas Ajv checks with. */
import { dereference, type Schema, validate } from "@cfworker/json-schema";
import metaApplicator from "ajv/dist/refs/json-schema-2020-12/meta/applicator.json" with { type: "json" };
import metaContent from "ajv/dist/refs/json-schema-2020-12/meta/content.json" with { type: "json" };
import metaCore from "ajv/dist/refs/json-schema-2020-12/meta/core.json" with { type: "json" };
import metaFormat from "ajv/dist/refs/json-schema-2020-12/meta/format-annotation.json" with { type: "json" };
import metaData from "ajv/dist/refs/json-schema-2020-12/meta/meta-data.json" with { type: "json" };
import metaUnevaluated from "ajv/dist/refs/json-schema-2020-12/meta/unevaluated.json" with { type: "json" };
import metaValidation from "ajv/dist/refs/json-schema-2020-12/meta/validation.json" with { type: "json" };
import metaSchema from "ajv/dist/refs/json-schema-2020-12/schema.json" with { type: "json" };

const VOCABULARIES = [metaCore, metaApplicator, metaUnevaluated, metaValidation, metaData, metaFormat, metaContent];

/**
 * A meta-schema as cfworker can follow it: it has no `$dynamicRef`, whose one use in these files (`#meta`) means the
 * meta-schema itself.
 */
const followable = (document: object): Schema =>
  JSON.parse(JSON.stringify(document).replaceAll('"$dynamicRef":"#meta"', `"$ref":${JSON.stringify(metaSchema.$id)}`));

let meta: { root: Schema; lookup: Record<string, Schema | boolean> } | undefined;

/**
 * Throws an Error with cfworker's words for a schema that is not valid draft 2020-12. The meta-schemas' formats are
 * checked: `regex` is how a `pattern` (or a `patternProperties` name) that is no regular expression with the `u` flag,
 * which cfworker would only find while validating a call, is refused at start-up, as Ajv refuses it when it compiles.
 */
export function checkSchema(schema: unknown): void {
  if (!meta) {
    const root = followable(metaSchema);
    const lookup = dereference(root);
    for (const vocabulary of VOCABULARIES) {
      dereference(followable(vocabulary), lookup);
    }
    meta = { root, lookup };
  }
  const result = validate(schema, meta.root, "2020-12", meta.lookup, true);
  // The last unit is the one problem found; those before it are the summaries leading to it.
  const unit = result.errors.at(-1);
  if (unit) {
    throw new Error(`schema is invalid: ${unit.instanceLocation} ${unit.error}`);
  }
}
