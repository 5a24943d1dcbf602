/** Reads spec/ and turns it into the forms the generators and the runtime need. */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { parse as parseYaml } from "yaml";

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | JsonObject;
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** One file of spec/schemas/. */
export interface SchemaFile {
  /** File name, e.g. `tool-definition.json`. */
  file: string;
  /** The schema's `title`, which is also its name in the OpenAPI components and in TypeScript. */
  title: string;
  schema: JsonObject;
}

/** spec/ as read from disk. */
export interface LoadedSpec {
  /** The directory the spec was read from. */
  dir: string;
  openapi: JsonObject;
  schemas: SchemaFile[];
}

/** Raised for a spec that cannot be bundled, naming the file and the rule it breaks. */
export class SpecError extends Error {
  override name = "SpecError";
}

/** Reads `openapi.yaml` and every `schemas/*.json` below `specDir`, in file-name order. */
export async function loadSpec(specDir: string): Promise<LoadedSpec> {
  const openapi = parseYaml(await readFile(path.join(specDir, "openapi.yaml"), "utf8")) as JsonObject;
  const schemaDir = path.join(specDir, "schemas");
  const files = (await readdir(schemaDir)).filter((f) => f.endsWith(".json")).sort();
  const schemas: SchemaFile[] = [];
  for (const file of files) {
    const schema = JSON.parse(await readFile(path.join(schemaDir, file), "utf8")) as JsonObject;
    if (typeof schema.title !== "string" || typeof schema.$id !== "string") {
      throw new SpecError(`schemas/${file}: every schema file needs a "title" and an "$id"`);
    }
    if (!schema.$id.endsWith(`/${file}`)) {
      throw new SpecError(`schemas/${file}: "$id" must end in "/${file}" so relative $refs resolve`);
    }
    schemas.push({ file, title: schema.title, schema });
  }
  return { dir: specDir, openapi, schemas };
}

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Keywords whose value maps names to subschemas: their keys are names, not keywords. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/** Keywords that only annotate; a `$ref` with nothing else beside it can be merged into its target. */
const ANNOTATIONS = new Set(["title", "description", "examples", "example", "deprecated", "$comment"]);

/**
 * Walks a schema and applies `visit` to every subschema (the root included), bottom-up.
 * Keys under `properties` and the like are property names and are left alone.
 */
export function mapSchema(schema: Json, visit: (node: JsonObject) => JsonObject): Json {
  if (Array.isArray(schema)) {
    return schema.map((item) => mapSchema(item, visit));
  }
  if (!isObject(schema)) {
    return schema;
  }
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, mapSchema(sub, visit)]));
    } else if (key === "enum" || key === "const" || key === "examples" || key === "example" || key === "default") {
      out[key] = value;
    } else {
      out[key] = mapSchema(value, visit);
    }
  }
  return visit(out);
}

/** Where a `$ref` inside a schema file points: a file and, optionally, one of its `$defs`. */
interface RefTarget {
  file: string;
  def?: string;
}

function parseSchemaRef(ref: string, fromFile: string): RefTarget {
  const match = /^(?:\.\/)?([A-Za-z0-9_.-]*?)(?:#\/\$defs\/([A-Za-z0-9_]+))?$/.exec(ref);
  if (!match) {
    throw new SpecError(`schemas/${fromFile}: cannot follow $ref "${ref}"`);
  }
  const [, file, def] = match;
  return def === undefined ? { file: file || fromFile } : { file: file || fromFile, def };
}

/**
 * Names every schema of the spec: a file by its title, one of its `$defs` by the def's title.
 * Names must be unique, because they become OpenAPI component and TypeScript type names.
 */
export class SchemaNames {
  private readonly byFile = new Map<string, SchemaFile>();

  constructor(readonly schemas: SchemaFile[]) {
    const seen = new Map<string, string>();
    for (const entry of schemas) {
      this.byFile.set(entry.file, entry);
    }
    for (const entry of schemas) {
      const names = [
        entry.title,
        ...Object.keys(this.defs(entry)).map((def) => this.nameOf({ file: entry.file, def })),
      ];
      for (const name of names) {
        const other = seen.get(name);
        if (other) {
          throw new SpecError(`schemas/${entry.file}: the name "${name}" is also used in schemas/${other}`);
        }
        seen.set(name, entry.file);
      }
    }
  }

  /** The `$defs` of a schema file. */
  defs(entry: SchemaFile): JsonObject {
    const defs = entry.schema.$defs;
    return isObject(defs) ? defs : {};
  }

  /** The schema file called `file`. */
  file(file: string, from = "openapi.yaml"): SchemaFile {
    const entry = this.byFile.get(file);
    if (!entry) {
      throw new SpecError(`${from}: $ref to schemas/${file}, which does not exist`);
    }
    return entry;
  }

  /** The component/type name of a ref target. */
  nameOf(target: RefTarget): string {
    const entry = this.file(target.file);
    if (target.def === undefined) {
      return entry.title;
    }
    const def = this.defs(entry)[target.def];
    if (!isObject(def)) {
      throw new SpecError(`schemas/${entry.file}: no $defs/${target.def}`);
    }
    return typeof def.title === "string" ? def.title : target.def;
  }

  /** The name a `$ref` found in `fromFile` points to. */
  resolveRef(ref: string, fromFile: string): { name: string; target: RefTarget } {
    const target = parseSchemaRef(ref, fromFile);
    this.file(target.file, `schemas/${fromFile}`);
    return { name: this.nameOf(target), target };
  }
}

/** Rewrites one schema of a file for the components form: refs point into components, no `$id`/`$schema`/`$defs`. */
function toComponentSchema(schema: JsonObject, file: string, names: SchemaNames): JsonObject {
  return mapSchema(schema, (node) => {
    const { $id: _id, $schema: _schema, $defs: _defs, ...rest } = node;
    if (typeof rest.$ref === "string") {
      rest.$ref = `#/components/schemas/${names.resolveRef(rest.$ref, file).name}`;
    }
    return rest;
  }) as JsonObject;
}

/**
 * The OpenAPI document with every schema under `components/schemas/<title>`: each schema file and
 * each of their `$defs`. Every `$ref` is local, and no schema carries `$id`, `$schema` or `$defs`.
 * openapi-typescript reads this form, and it is the base of the dereferenced document.
 */
export function toComponentsForm(spec: LoadedSpec): JsonObject {
  const names = new SchemaNames(spec.schemas);
  const document = structuredClone(spec.openapi);
  const components = isObject(document.components) ? document.components : {};
  const declared = isObject(components.schemas) ? components.schemas : {};
  const schemas: JsonObject = {};

  for (const [name, entry] of Object.entries(declared)) {
    if (isObject(entry) && typeof entry.$ref === "string" && entry.$ref.includes(".json")) {
      const file = names.file(path.basename(entry.$ref));
      if (file.title !== name) {
        throw new SpecError(
          `openapi.yaml: components/schemas/${name} points to schemas/${file.file}, titled "${file.title}"`,
        );
      }
      continue; // filled in below, from the file itself
    }
    schemas[name] = entry;
  }
  for (const entry of spec.schemas) {
    schemas[entry.title] = toComponentSchema(entry.schema, entry.file, names);
    for (const [def, schema] of Object.entries(names.defs(entry))) {
      schemas[names.nameOf({ file: entry.file, def })] = toComponentSchema(schema as JsonObject, entry.file, names);
    }
  }
  // Keep the order the document declares, then the rest (the $defs) in file order.
  const ordered: JsonObject = {};
  for (const name of Object.keys(declared)) {
    ordered[name] = schemas[name] ?? null;
  }
  for (const [name, schema] of Object.entries(schemas)) {
    if (!(name in ordered)) {
      ordered[name] = schema;
    }
  }

  const rewriteDocumentRefs = (node: Json): Json => {
    if (Array.isArray(node)) {
      return node.map(rewriteDocumentRefs);
    }
    if (!isObject(node)) {
      return node;
    }
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string" && value.includes(".json")) {
        out[key] = `#/components/schemas/${names.resolveRef(path.basename(value), "openapi.yaml").name}`;
      } else {
        out[key] = rewriteDocumentRefs(value);
      }
    }
    return out;
  };
  const rewritten = rewriteDocumentRefs(document) as JsonObject;
  rewritten.components = { ...(rewritten.components as JsonObject), schemas: ordered };
  return rewritten;
}

function resolvePointer(document: JsonObject, ref: string): Json {
  if (!ref.startsWith("#/")) {
    throw new SpecError(`cannot dereference non-local $ref "${ref}"`);
  }
  let node: Json = document;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (!isObject(node) || !(key in node)) {
      throw new SpecError(`$ref "${ref}" points to nothing`);
    }
    node = node[key] as Json;
  }
  return node;
}

/**
 * Inlines every local `$ref` of a components-form document. A `$ref` with only annotations beside it
 * is merged into a copy of its target (the annotations win); one with other keywords beside it
 * becomes `allOf: [target]` plus those keywords, so no constraint is lost.
 */
export function dereference(document: JsonObject): JsonObject {
  const walk = (node: Json, stack: string[]): Json => {
    if (Array.isArray(node)) {
      return node.map((item) => walk(item, stack));
    }
    if (!isObject(node)) {
      return node;
    }
    if (typeof node.$ref === "string") {
      const ref = node.$ref;
      if (stack.includes(ref)) {
        throw new SpecError(`circular $ref: ${[...stack, ref].join(" -> ")}`);
      }
      const target = walk(resolvePointer(document, ref), [...stack, ref]);
      const { $ref: _ref, ...siblings } = node;
      const rest = walk(siblings, stack) as JsonObject;
      if (Object.keys(rest).length === 0) {
        return target;
      }
      if (Object.keys(rest).every((key) => ANNOTATIONS.has(key)) && isObject(target)) {
        return { ...target, ...rest };
      }
      return { ...rest, allOf: [target] };
    }
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      out[key] = walk(value, stack);
    }
    return out;
  };
  return walk(document, []) as JsonObject;
}
