/** `otc codegen`: typed bindings (input and output types per tool, and typed wrappers) from a tool catalog. */
import { parseToolId, ToolAnnotationsSchema, type ToolDefinition } from "@otc/types";
import { compile, type Options } from "json-schema-to-typescript";
import { hintWords } from "./annotations.js";

type Schema = Record<string, unknown>;

/** The project's biome.jsonc line width: bindings are laid out as Biome lays them out, so `biome ci` passes on them. */
const LINE_WIDTH = 120;

/**
 * What an object without properties becomes. `{}` would accept any value but null, and Biome refuses it
 * (noBannedTypes, and noEmptyInterface for `interface X {}`).
 */
const NO_PROPERTIES = "Record<string, never>";

/**
 * A catalog the generator refuses to write bindings for (docs/protocol.md 6, definitions.client-codegen-safe):
 * the message names the tool, the schema and the place.
 */
export class CatalogError extends Error {
  override name = "CatalogError";
}

/**
 * How deep a schema may nest, counting every object and array (a property of an object inside an array
 * is three levels down). Deeper schemas are refused before anything recurses through them.
 */
export const MAX_SCHEMA_DEPTH = 128;

/**
 * The most copies of its item type a bounded array may write and still become a tuple type.
 * json-schema-to-typescript writes one copy per item of each tuple in a union of tuples from `minItems` to
 * `maxItems` (`[] | [T] | [T, T]` for 0 to 2: three copies), or `minItems` copies and a `...T[]` rest when there is
 * no `maxItems`. An array whose bounds would write more keeps only its `minItems` where that alone fits, else
 * neither: the type is `T[]`. An array inside one that became a tuple is always `T[]`, so copies never multiply:
 * whatever `minItems` and `maxItems` say, a tool's types stay within about this many times the size of its schema.
 */
export const MAX_TUPLE_ITEMS = 10;

/**
 * The most bytes of TypeScript `otc codegen` writes for one catalog (the default of {@link BindingsOptions}'s
 * `maxBytes`): past it, the catalog is refused with a {@link CatalogError} instead of growing a file no one can
 * compile, and generation stops at the tool that passed it.
 */
export const MAX_BINDINGS_BYTES = 4 * 1024 * 1024;

/** How {@link generateBindings} bounds its output. */
export interface BindingsOptions {
  /** The most bytes (UTF-8) of the file; {@link MAX_BINDINGS_BYTES} unless said. */
  maxBytes?: number;
}

/** A TypeScript name for a tool id: `Calculator.Add@1.0.0` -> `CalculatorAddV1_0_0`. */
export function typeNameOf(toolId: string): string {
  // An id that is no tool id (generateBindings refuses those) is named whole, without what no identifier may hold.
  const { qualifiedName, version = "" } = parseToolId(toolId) ?? { qualifiedName: toolId };
  const base = qualifiedName
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  return `${base}V${version.replaceAll(".", "_")}`.replace(/[^A-Za-z0-9_]/g, "");
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Defines an own property: a key such as `__proto__` from a catalog is data, never a prototype. */
function setOwn(target: Schema, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * True for a code point that has no place in generated text: C0 and C1 controls (tab and line feed are
 * handled by the callers), line and paragraph separators, byte order marks, and the bidirectional controls
 * that can make a comment read differently from what the compiler sees (CVE-2021-42574, "Trojan Source").
 */
function isUnsafe(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0xfeff
  );
}

/**
 * A catalog's text made safe inside a `/** *\/` block comment: every line terminator of JavaScript
 * (`\r\n`, `\r`, U+2028, U+2029) and U+0085 become `\n`, other unsafe characters are dropped, and `*\/` and
 * `/*` are written `*\/` and `/\*`, so the text can neither end the comment nor look as if it did.
 */
function blockCommentText(text: string): string {
  const lines = text.replace(/\r\n?|[\u2028\u2029\u0085]/g, "\n");
  let out = "";
  for (const char of lines) {
    const code = char.codePointAt(0) ?? 0;
    if (char === "\n" || char === "\t" || !isUnsafe(code)) {
      out += char;
    }
  }
  return out.replaceAll("*/", "*\\/").replaceAll("/*", "/\\*");
}

/** The first line of a text, for a `//` comment: it ends at any line terminator; other unsafe characters are dropped. */
function lineCommentText(text: string): string {
  const line = text.split(/[\r\n\u2028\u2029\u0085]/)[0] ?? "";
  let out = "";
  for (const char of line) {
    if (char === "\t" || !isUnsafe(char.codePointAt(0) ?? 0)) {
      out += char;
    }
  }
  return out.trim();
}

/**
 * A catalog's text as the lines of a JSDoc comment: safe in a block comment ({@link blockCommentText}), tabs as
 * spaces, and every `@` that could start a tag written `\@` (TypeScript reads `@name` after any space, and
 * `{@link}`, as tags), so the text cannot add `@deprecated` or any other tag. An `@` after a letter, a digit,
 * `.`, `_` or `-` stays as it is (`Greeting.Hello@2.0.0`, `ops@example.com`).
 */
function docCommentLines(text: string): string[] {
  return blockCommentText(text)
    .replaceAll("\t", " ")
    .replace(/(^|[^\p{L}\p{N}._-])@/gmu, "$1\\@")
    .split("\n")
    .map((line) => line.trimEnd());
}

/**
 * The doc comment of a tool's member of `Tools`, where editors show it for `tools["Toolkit.Tool@x.y.z"]`: its
 * title, the hints it states and its deprecation as `@deprecated` (docs/protocol.md 9.2). None for a tool that
 * has none of them.
 */
function toolDocComment(tool: ToolDefinition): string[] {
  const lines: string[] = [];
  const title = tool.annotations?.title;
  if (title !== undefined && title !== "") {
    lines.push(`Title: ${docCommentLines(title).join(" ")}`);
  }
  const hints = hintWords(tool.annotations);
  if (hints.length > 0) {
    lines.push(`Hints, not guarantees: ${hints.join(", ")}.`);
  }
  if (tool.deprecation_message !== undefined) {
    const [first = "", ...rest] = docCommentLines(tool.deprecation_message);
    lines.push(`@deprecated ${first}`.trimEnd(), ...rest);
  }
  if (lines.length === 0) {
    return [];
  }
  return ["  /**", ...lines.map((line) => (line === "" ? "   *" : `   * ${line}`)), "   */"];
}

/**
 * The generated code with every unsafe character but `\n` and tab written as a `\u` escape. Comments hold none by
 * now, so what is left sits in quoted keys and string literals (JSON.stringify leaves U+2028, U+2029, C1
 * controls and bidirectional controls as they are), where the escape means the same string.
 */
function escapeUnsafe(code: string): string {
  return code.replace(/[^\n\t\x20-\x7e]/gu, (char) => {
    const point = char.codePointAt(0) ?? 0;
    return isUnsafe(point) ? `\\u${point.toString(16).padStart(4, "0")}` : char;
  });
}

/** A string from the catalog for an error message: quoted, cut short, every unsafe character escaped. */
function quote(text: string, max = 80): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(cut).replace(/[^\x20-\x7e]/g, (char) => {
    const code = char.codePointAt(0) ?? 0;
    return isUnsafe(code) ? `\\u${code.toString(16).padStart(4, "0")}` : char;
  });
}

/** A JSON Pointer segment (RFC 6901). */
const segment = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

// The allow-list: the JSON Schema keywords json-schema-to-typescript reads, and those it needs to read the others right.
/** JSON Schema's seven types: the only values of `type`. */
const TYPES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"]);
/** Keywords whose value is one schema (or a boolean schema). */
const ONE_SCHEMA = new Set([
  "additionalItems",
  "additionalProperties",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
]);
const SCHEMA_LIST = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
const SCHEMA_MAP = new Set(["properties", "dependentSchemas"]);
/**
 * Validation keywords: they never reach the output, but json-schema-to-typescript reads an `allOf` member that
 * holds only such keywords differently from an empty one, so they stay (checked).
 */
const COUNTS = new Set(["minProperties", "maxProperties", "minLength", "maxLength", "minContains", "maxContains"]);
const NUMBERS = new Set(["minimum", "maximum", "multipleOf"]);
const NUMBERS_OR_FLAGS = new Set(["exclusiveMinimum", "exclusiveMaximum"]);
const STRINGS = new Set(["pattern", "format", "contentEncoding", "contentMediaType"]);
const FLAGS = new Set(["deprecated", "readOnly", "writeOnly", "uniqueItems"]);
/** Values that are data, not schemas: kept as they are, once checked for references. */
const DATA = new Set(["enum", "const", "default"]);
/** References: refused anywhere, data included, because a reference resolver follows them wherever they are. */
const REFERENCES = new Set(["$ref", "$dynamicRef", "$recursiveRef"]);

/** Keywords that leave an object schema without any property when nothing else is said. */
const ANNOTATIONS = new Set([
  "type",
  "description",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "minProperties",
  "maxProperties",
]);

/** An object schema that allows no property: `additionalProperties` absent counts as closed, as in `typeFor`. */
function allowsNoProperty(schema: Schema): boolean {
  if (schema.type !== "object") {
    return false;
  }
  return Object.entries(schema).every(
    ([key, value]) =>
      ANNOTATIONS.has(key) ||
      (key === "properties" && isSchema(value) && Object.keys(value).length === 0) ||
      (key === "required" && Array.isArray(value) && value.length === 0) ||
      ((key === "additionalProperties" || key === "unevaluatedProperties") && value === false),
  );
}

/** Where the walk is: the tool and schema it reports, and what the path above allows. */
interface Place {
  tool: string;
  field: "input_schema" | "output_schema";
  path: string;
  depth: number;
  /** An array above already became a tuple type: this one stays `T[]`. */
  inTuple: boolean;
}

function refuse(place: Place, problem: string, why = ""): never {
  const where = quote(place.path || "/", 200);
  throw new CatalogError(
    `tool ${quote(place.tool)} is refused: ${place.field} ${problem} at ${where}${why && ` (${why})`}`,
  );
}

/** Why a reference is refused, wherever it is. */
const NO_REFERENCE = "otc codegen follows no reference: a tool's schemas are self-contained";

const below = (place: Place, key: string | number, extra: Partial<Place> = {}): Place => ({
  ...place,
  path: `${place.path}/${typeof key === "number" ? key : segment(key)}`,
  depth: place.depth + 1,
  ...extra,
});

function checkDepth(place: Place): void {
  if (place.depth > MAX_SCHEMA_DEPTH) {
    refuse(place, `nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  }
}

/** Checks data (`enum`, `const`, `default`) for references and depth; the data itself is kept as it is. */
function checkData(value: unknown, place: Place): void {
  checkDepth(place);
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      checkData(item, below(place, i));
    }
  } else if (isSchema(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (REFERENCES.has(key)) {
        refuse(below(place, key), `has ${key}`, NO_REFERENCE);
      }
      checkData(item, below(place, key));
    }
  }
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** How many copies of the item type a tuple union from `min` to `max` items writes (a `...T[]` rest when no `max`). */
function tupleCopies(min: number, max: number | undefined): number {
  if (max === undefined) {
    return min + 1;
  }
  // The sum of min..max; a max below min is left to json-schema-to-typescript, which refuses it.
  return max < min ? 0 : ((max - min + 1) * (min + max)) / 2;
}

/**
 * Which of an array schema's `minItems` and `maxItems` reach json-schema-to-typescript: both when the tuples they
 * make stay within {@link MAX_TUPLE_ITEMS} copies of the item, else `minItems` alone when that fits, else neither.
 */
function keptTupleBounds(schema: Schema, inTuple: boolean): Set<string> {
  const min = isCount(schema.minItems) ? schema.minItems : undefined;
  const max = isCount(schema.maxItems) ? schema.maxItems : undefined;
  if (inTuple || (min === undefined && max === undefined)) {
    return new Set();
  }
  if (max !== undefined && tupleCopies(min ?? 0, max) <= MAX_TUPLE_ITEMS) {
    return new Set(min === undefined ? ["maxItems"] : ["minItems", "maxItems"]);
  }
  return min !== undefined && min > 0 && tupleCopies(min, undefined) <= MAX_TUPLE_ITEMS
    ? new Set(["minItems"])
    : new Set();
}

/**
 * A copy of a schema from the catalog that json-schema-to-typescript can only turn into types. Standard
 * JSON Schema keywords that bear on types are kept, each checked to hold the kind of value the standard
 * says; everything else is dropped: the generator's own extensions (`tsType`, `tsEnumNames`, `extends`,
 * `nullable`...), `$id` and `title` (they name types, and names from different tools could collide),
 * `$defs`, vendor keywords. A reference anywhere is refused, and so is a value of the wrong kind.
 * Descriptions and patternProperties' patterns, which the generator writes into comments, are made safe
 * for a block comment. Objects that allow no property are typed as {@link NO_PROPERTIES}.
 */
function sanitize(schema: unknown, place: Place): unknown {
  checkDepth(place);
  if (typeof schema === "boolean") {
    return schema;
  }
  if (!isSchema(schema)) {
    refuse(place, "has a schema that is neither an object nor a boolean");
  }
  const out: Schema = {};
  const subschema = (value: unknown, key: string, extra: Partial<Place> = {}) =>
    sanitize(value, below(place, key, extra));
  const keptBounds = keptTupleBounds(schema, place.inTuple);
  for (const [key, value] of Object.entries(schema)) {
    const here = below(place, key);
    if (REFERENCES.has(key)) {
      refuse(here, `has ${key}`, NO_REFERENCE);
    }
    if (key === "type") {
      const types = Array.isArray(value) ? value : [value];
      if (types.length === 0 || !types.every((type) => typeof type === "string" && TYPES.has(type))) {
        refuse(here, "has a type that is not one of JSON Schema's seven");
      }
      setOwn(out, key, Array.isArray(value) ? [...value] : value);
    } else if (key === "description") {
      if (typeof value !== "string") {
        refuse(here, "has a description that is not a string");
      }
      setOwn(out, key, blockCommentText(value));
    } else if (key === "required") {
      if (!Array.isArray(value) || !value.every((name) => typeof name === "string")) {
        refuse(here, "has a required that is not a list of names");
      }
      setOwn(out, key, [...value]);
    } else if (key === "items") {
      const extra = { inTuple: place.inTuple || keptBounds.size > 0 };
      setOwn(
        out,
        key,
        Array.isArray(value)
          ? value.map((item, i) => sanitize(item, below(here, i, extra)))
          : subschema(value, key, extra),
      );
    } else if (ONE_SCHEMA.has(key)) {
      setOwn(out, key, subschema(value, key));
    } else if (SCHEMA_LIST.has(key)) {
      if (!Array.isArray(value)) {
        refuse(here, `has a ${key} that is not a list of schemas`);
      }
      setOwn(
        out,
        key,
        value.map((item, i) => sanitize(item, below(here, i))),
      );
    } else if (SCHEMA_MAP.has(key) || key === "patternProperties") {
      if (!isSchema(value)) {
        refuse(here, `has a ${key} that is not an object of schemas`);
      }
      const map: Schema = {};
      for (const [name, item] of Object.entries(value)) {
        // A pattern appears in a comment of the generated file; a property name only as a quoted key.
        const safeName = key === "patternProperties" ? blockCommentText(name) : name;
        if (!Object.hasOwn(map, safeName)) {
          setOwn(map, safeName, sanitize(item, below(here, name)));
        }
      }
      setOwn(out, key, map);
    } else if (key === "minItems" || key === "maxItems") {
      if (!isCount(value)) {
        refuse(here, `has a ${key} that is not a non-negative integer`);
      }
      if (keptBounds.has(key)) {
        setOwn(out, key, value);
      }
    } else if (COUNTS.has(key)) {
      if (!isCount(value)) {
        refuse(here, `has a ${key} that is not a non-negative integer`);
      }
      setOwn(out, key, value);
    } else if (NUMBERS.has(key) || NUMBERS_OR_FLAGS.has(key)) {
      const ok = Number.isFinite(value) || (NUMBERS_OR_FLAGS.has(key) && typeof value === "boolean");
      if (!ok) {
        refuse(here, `has a ${key} that is not a number`);
      }
      setOwn(out, key, value);
    } else if (STRINGS.has(key)) {
      if (typeof value !== "string") {
        refuse(here, `has a ${key} that is not a string`);
      }
      setOwn(out, key, value);
    } else if (FLAGS.has(key)) {
      if (typeof value !== "boolean") {
        refuse(here, `has a ${key} that is not a boolean`);
      }
      setOwn(out, key, value);
    } else if (key === "dependentRequired") {
      const lists = isSchema(value) ? Object.values(value) : [undefined];
      if (!lists.every((names) => Array.isArray(names) && names.every((name) => typeof name === "string"))) {
        refuse(here, "has a dependentRequired that is not an object of lists of names");
      }
      setOwn(out, key, value);
    } else if (DATA.has(key)) {
      if (key === "enum" && !Array.isArray(value)) {
        refuse(here, "has an enum that is not a list");
      }
      checkData(value, here);
      setOwn(out, key, value);
    }
    // Anything else is dropped: it cannot change a type, or it is an extension no catalog may drive.
  }
  if (allowsNoProperty(out)) {
    out.tsType = NO_PROPERTIES;
  }
  return out;
}

/**
 * What json-schema-to-typescript may do with a reference that got past {@link sanitize}: nothing. No file,
 * no network, no external document, and no pointer is followed (every path is excluded from dereferencing),
 * so a leftover `$ref` fails the generation instead of reading or fetching anything.
 */
export const NO_REFERENCES: Options["$refOptions"] = {
  resolve: { external: false, file: false, http: false },
  dereference: { excludedPathMatcher: () => true },
};

async function typeFor(schema: unknown, name: string, place: Place, input: boolean): Promise<string> {
  if (!isSchema(schema)) {
    refuse(place, "is not a JSON Schema object");
  }
  const sanitized = sanitize(input && schema.type === undefined ? { type: "object", ...schema } : schema, place);
  if (!input && isSchema(sanitized) && Object.keys(sanitized).length === 0) {
    return `export type ${name} = unknown;\n`;
  }
  const code = await compile(sanitized as Parameters<typeof compile>[0], name, options).catch((error: unknown) =>
    refuse(place, "cannot be turned into types", quote(error instanceof Error ? error.message : String(error), 200)),
  );
  // A safety net for empty interfaces the schema walk did not foresee.
  return escapeUnsafe(code)
    .trim()
    .replace(/^export interface (\w+) \{\}$/gm, `export type $1 = ${NO_PROPERTIES};`)
    .concat("\n");
}

/** json-schema-to-typescript's options: no reference followed, no banner, laid out as Biome lays it out. */
const options: Partial<Options> = {
  $refOptions: NO_REFERENCES,
  bannerComment: "",
  // The generator's own bound on tuple unions; sanitize keeps only bounds within it (see MAX_TUPLE_ITEMS).
  maxItems: MAX_TUPLE_ITEMS,
  additionalProperties: false,
  declareExternallyReferenced: true,
  format: true,
  unknownAny: true,
  strictIndexSignatures: false,
  // Prettier with Biome's settings (see biome.jsonc); json-schema-to-typescript's defaults differ.
  style: {
    bracketSpacing: true,
    printWidth: LINE_WIDTH,
    semi: true,
    singleQuote: false,
    tabWidth: 2,
    trailingComma: "all",
    useTabs: false,
  },
};

/** `[a, b] as const` on one line when it fits, else one item a line, as Biome writes it. */
function constArray(head: string, items: readonly string[]): string[] {
  const flat = `${head}[${items.join(", ")}] as const;`;
  if (flat.length <= LINE_WIDTH || items.length === 0) {
    return [flat];
  }
  return [`${head}[`, ...items.map((item) => `  ${item},`), "] as const;"];
}

/** One member of `Tools`, broken over lines as Biome does when it is wider than the line. */
function toolsMember(key: string, name: string): string[] {
  const flat = `  ${key}: { input: ${name}Input; output: ${name}Output };`;
  if (flat.length <= LINE_WIDTH) {
    return [flat];
  }
  return [`  ${key}: {`, `    input: ${name}Input;`, `    output: ${name}Output;`, "  };"];
}

/** Refuses annotations or a deprecation message holding the wrong kind of value, by the spec's ToolAnnotations. */
function checkAnnotations(id: string, annotations: unknown, deprecation: unknown): void {
  const refused = (why: string) => new CatalogError(`tool ${quote(id)} is refused: ${why}`);
  if (annotations !== undefined) {
    if (!isSchema(annotations)) {
      throw refused("its annotations are not an object");
    }
    // Keys the spec does not know are left out of the bindings; the known ones must hold their kind of value.
    for (const [key, property] of Object.entries(ToolAnnotationsSchema.properties)) {
      const value = Object.hasOwn(annotations, key) ? annotations[key] : undefined;
      if (value !== undefined && typeof value !== property.type) {
        throw refused(`its annotations' ${key} is not a ${property.type}`);
      }
    }
  }
  if (deprecation !== undefined && typeof deprecation !== "string") {
    throw refused("its deprecation_message is not a string");
  }
}

/**
 * Refuses what no bindings can be written for: ids that are no `Toolkit.Tool@x.y.z`, twins, clashing names,
 * annotations of the wrong kind.
 */
function checkTools(tools: readonly ToolDefinition[]): void {
  const names = new Map<string, string>();
  for (const tool of tools as readonly unknown[]) {
    const {
      id,
      description,
      annotations,
      deprecation_message: deprecation,
    } = (isSchema(tool) ? tool : {}) as {
      id?: unknown;
      description?: unknown;
      annotations?: unknown;
      deprecation_message?: unknown;
    };
    if (typeof id !== "string" || parseToolId(id)?.kind !== "exact") {
      throw new CatalogError(
        `the catalog has a tool id that is not Toolkit.Tool@x.y.z: ${typeof id === "string" ? quote(id) : String(id)}`,
      );
    }
    if (typeof description !== "string") {
      throw new CatalogError(`tool ${quote(id)} is refused: its description is not a string`);
    }
    checkAnnotations(id, annotations, deprecation);
    const name = typeNameOf(id);
    const twin = names.get(name);
    if (twin !== undefined) {
      throw new CatalogError(
        twin === id
          ? `the catalog lists tool ${quote(id)} twice`
          : `tools ${quote(twin)} and ${quote(id)} would both be named ${name}`,
      );
    }
    names.set(name, id);
  }
}

/**
 * The TypeScript of typed bindings for a catalog: `Tools` (id -> input and output types), `toolIds`,
 * `createTools(client)`, whose `tools["Calculator.Add@1.0.0"]({ a: 1, b: 2 })` is type-checked
 * and resolves with the typed value, and `createAsyncTools(client)`, its asynchronous variant (docs/protocol.md
 * 9.3), whose `tools["System.Sleep@1.0.0"]({ ms: 3000 })` resolves with a handle to the running call: its
 * progress, `cancel()`, and `result()`, which resolves with the typed value. Deterministic: the same catalog gives
 * the same file, which passes `biome check` with the project's settings and `tsc --strict`.
 *
 * A tool with annotations or a deprecation message (docs/protocol.md 9.2, listed when the catalog was asked
 * with the annotations extension) gets a doc comment on its `Tools` member: its title, the hints it states,
 * and `@deprecated` with the message, which editors show (struck through) on `tools["Toolkit.Tool@x.y.z"]`.
 * Other tools' members have none, so a catalog without annotations gives the same file as before them.
 *
 * The catalog is treated as hostile (docs/protocol.md 6, definitions.client-codegen-safe): the file declares types
 * and the four exports above, nothing else, whatever the catalog says; the two functions are the same fixed text in
 * every file, over @otc/client's `bindTools` and `bindAsyncTools`. A reference (`$ref`) anywhere is refused and never
 * followed; text from the catalog ends up only in comments, which it cannot end, and in quoted keys and string
 * literals. Throws a {@link CatalogError} naming the tool and the place for a catalog it refuses.
 *
 * The output is bounded: a bounded array becomes a tuple type only where that stays small ({@link MAX_TUPLE_ITEMS}),
 * and a file that would pass `maxBytes` ({@link MAX_BINDINGS_BYTES} unless said) is refused with a
 * {@link CatalogError}, as soon as the tool that passes it is generated.
 */
export async function generateBindings(
  tools: readonly ToolDefinition[],
  source: string,
  { maxBytes = MAX_BINDINGS_BYTES }: BindingsOptions = {},
): Promise<string> {
  checkTools(tools);
  const sorted = [...tools].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // Bytes of the file written so far (each part with the line feed that joins it): never more than the file has.
  let bytes = 0;
  /** Counts bytes of the file and refuses the catalog once they pass maxBytes: generation stops there. */
  const count = (more: number, tool?: string) => {
    bytes += more;
    if (bytes > maxBytes) {
      const where = tool === undefined ? "" : ` (passed at tool ${quote(tool)})`;
      throw new CatalogError(
        `the catalog is refused: its bindings would be larger than otc codegen's bound of ${maxBytes} bytes${where}`,
      );
    }
  };
  const parts = [
    `// Generated by otc codegen from ${lineCommentText(source)} — do not edit.`,
    // Lint rules are a matter of taste the generator cannot know (naming conventions, say); formatting still applies.
    "// biome-ignore-all lint: generated by otc codegen; regenerate it instead of editing it",
    "",
    'import { type BoundAsyncTools, type BoundTools, bindAsyncTools, bindTools, type OxpClient } from "@otc/client";',
    "",
  ];
  const members: string[] = [];
  for (const tool of sorted) {
    const name = typeNameOf(tool.id);
    const description = lineCommentText(tool.description);
    const place = { tool: tool.id, path: "", depth: 0, inTuple: false };
    const written = [
      `// ${tool.id}${description ? `: ${description}` : ""}`,
      await typeFor(tool.input_schema, `${name}Input`, { ...place, field: "input_schema" }, true),
      tool.output_schema === null
        ? `export type ${name}Output = null;\n`
        : await typeFor(tool.output_schema, `${name}Output`, { ...place, field: "output_schema" }, false),
    ];
    const member = [...toolDocComment(tool), ...toolsMember(JSON.stringify(tool.id), name)];
    count(
      [...written, ...member].reduce((sum, text) => sum + Buffer.byteLength(text) + 1, 0),
      tool.id,
    );
    parts.push(...written);
    members.push(...member);
  }
  parts.push(
    "/** Every tool of the catalog: its input and output types. */",
    ...(members.length > 0 ? ["export interface Tools {", ...members, "}"] : [`export type Tools = ${NO_PROPERTIES};`]),
    "",
    "/** The tool ids of the catalog. */",
    ...constArray(
      "export const toolIds = ",
      sorted.map((tool) => JSON.stringify(tool.id)),
    ),
    "",
    "/** One typed function per tool: resolves with the tool's value, throws OxpToolCallError when the tool fails. */",
    "export function createTools(client: OxpClient): BoundTools<Tools> {",
    "  return bindTools<Tools>(client, toolIds);",
    "}",
    "",
    "/**",
    " * One typed function per tool that starts it as a task (where the server offers tasks): resolves with a handle",
    " * to follow its progress or cancel it; its result() resolves with the tool's value, rejects with OxpToolCallError.",
    " */",
    "export function createAsyncTools(client: OxpClient): BoundAsyncTools<Tools> {",
    "  return bindAsyncTools<Tools>(client, toolIds);",
    "}",
    "",
  );
  const code = parts.join("\n");
  // The whole file, exactly: the count above left out its fixed text and toolIds.
  bytes = 0;
  count(Buffer.byteLength(code));
  return code;
}
