/** Reads the spec's files (schemas and examples) for this repository's tests and tools; not published. */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** The absolute path of spec/. */
export const specDir = path.dirname(fileURLToPath(import.meta.url));

/** A JSON Schema file of spec/schemas/. */
export interface SchemaFile {
  file: string;
  title: string;
  id: string;
  schema: Record<string, unknown>;
}

/** One file of spec/examples/<SchemaName>/ (valid) or spec/examples/<SchemaName>/invalid/. */
export interface ExampleFile {
  /** The title of the schema the example is for, e.g. `CallToolResponse`. */
  schemaName: string;
  /** The file name without `.json`. */
  name: string;
  valid: boolean;
  /** The path relative to spec/, for messages. */
  file: string;
  body: unknown;
}

const readJson = (file: string): unknown => JSON.parse(readFileSync(file, "utf8"));

/** Every schema of spec/schemas/, in file-name order. */
export function loadSchemaFiles(): SchemaFile[] {
  const dir = path.join(specDir, "schemas");
  return readdirSync(dir)
    .filter((file) => file.endsWith(".json"))
    .sort()
    .map((file) => {
      const schema = readJson(path.join(dir, file)) as Record<string, unknown>;
      return { file, title: String(schema.title), id: String(schema.$id), schema };
    });
}

/** Every example of spec/examples/, valid and invalid, in path order. */
export function loadExamples(): ExampleFile[] {
  const dir = path.join(specDir, "examples");
  const examples: ExampleFile[] = [];
  for (const schemaName of readdirSync(dir).sort()) {
    for (const [sub, valid] of [
      ["", true],
      ["invalid", false],
    ] as const) {
      const folder = path.join(dir, schemaName, sub);
      const files = readdirSync(folder).filter((file) => file.endsWith(".json"));
      for (const file of files.sort()) {
        const full = path.join(folder, file);
        examples.push({
          schemaName,
          name: file.replace(/\.json$/, ""),
          valid,
          file: path.relative(specDir, full),
          body: readJson(full),
        });
      }
    }
  }
  return examples;
}

/** An Ajv (JSON Schema 2020-12, formats checked, all errors) holding every schema of spec/schemas/. */
export function createSpecAjv(schemas: readonly object[] = loadSchemaFiles().map((entry) => entry.schema)): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats.default(ajv);
  for (const schema of schemas) {
    ajv.addSchema(schema);
  }
  return ajv;
}
