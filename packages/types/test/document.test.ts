// Checks the bundled OpenAPI document and the schema consts that @otc/types ships.
import { createSpecAjv, loadExamples, loadSchemaFiles } from "@otc/spec";
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { createAjv } from "../src/ajv.js";
import * as validators from "../src/generated/validators.js";
import { allSchemas, OXP_ROUTES, OXP_VERSION, openapiDocument, SUPPORTED_OXP_VERSIONS } from "../src/index.js";

type Node = Record<string, unknown>;
const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null;

/** Every key used anywhere in a JSON value. */
function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) {
      keysOf(item, into);
    }
  } else if (isNode(value)) {
    for (const [key, item] of Object.entries(value)) {
      into.add(key);
      keysOf(item, into);
    }
  }
  return into;
}

const document = openapiDocument as Node & { paths: Record<string, Record<string, Node>>; components: Node };
const componentSchemas = document.components.schemas as Record<string, Node>;

describe("openapiDocument", () => {
  it("is OpenAPI 3.1 with every $ref inlined and no $id, $defs or $schema keyword inside", () => {
    expect(document.openapi).toBe("3.1.0");
    const keys = keysOf(document);
    expect(keys.has("$ref")).toBe(false);
    expect(keys.has("$id")).toBe(false);
    expect(keys.has("$defs")).toBe(false);
    // "$schema" survives only as a property name of the envelopes.
    expect(componentSchemas.CallToolEnvelope?.properties).toHaveProperty(["$schema"]);
    expect(componentSchemas.CallToolEnvelope?.$schema).toBeUndefined();
  });

  it("serves the four 1.0 routes and the extensions' seven, and every response of every operation carries OXP-Version", () => {
    expect(Object.keys(document.paths).sort()).toEqual([
      "/.well-known/oauth-protected-resource",
      "/.well-known/oxp",
      "/authorization/challenges/{challenge_id}",
      "/connections",
      "/connections/{connection_id}",
      "/health",
      "/toolkits",
      "/tools",
      "/tools/call",
      "/tools/calls/{call_id}",
      "/tools/calls/{call_id}/events",
    ]);
    for (const [route, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(operation.responses as Record<string, Node>)) {
          const header = (response.headers as Record<string, Node> | undefined)?.["OXP-Version"];
          expect(header?.required, `${method} ${route} ${status}`).toBe(true);
          expect(header?.schema).toEqual({ type: "string", const: OXP_VERSION });
          // A 204 has no body (a deleted connection, docs/protocol.md 9.7), nor a 304 (docs/protocol.md 9.9).
          if (status === "204" || status === "304") {
            expect(response.content, `${method} ${route} ${status} has no body`).toBeUndefined();
            continue;
          }
          // The one body that is not JSON: a call's event stream (docs/protocol.md 9.3).
          const media = route.endsWith("/events") && status === "200" ? "text/event-stream" : "application/json";
          expect(response.content, `${method} ${route} ${status} has a ${media} body`).toHaveProperty([media]);
        }
      }
    }
  });

  it("is what OXP_ROUTES states: every path, with the methods declared for it", () => {
    const declared = Object.entries(document.paths).map(([route, operations]) => ({
      path: route,
      methods: Object.keys(operations).map((method) => method.toUpperCase()),
    }));
    expect(OXP_ROUTES).toEqual(declared);
  });

  verifies("spec.api-key-scheme", "lets only /health and the discovery documents go without authentication", () => {
    const open = new Set(["/health", "/.well-known/oxp", "/.well-known/oauth-protected-resource"]);
    for (const [route, operations] of Object.entries(document.paths)) {
      for (const operation of Object.values(operations)) {
        expect(operation.security === undefined ? "global" : "none", route).toBe(open.has(route) ? "none" : "global");
      }
    }
    expect(document.security).toEqual([{ apiKey: [] }, { bearerAuth: [] }, {}]);
  });

  it("states the OXP-Version values docs/protocol.md accepts", () => {
    expect(SUPPORTED_OXP_VERSIONS).toEqual(["1.0", "1", "1.0.0"]);
  });
});

describe("the dereferenced component schemas", () => {
  // The bundler rewrites refs, hoists $defs and merges siblings; the result must judge every
  // example exactly as the source schema files do.
  const ajv = createAjv({ allErrors: true });
  const examples = loadExamples();

  it.each([...new Set(examples.map((example) => example.schemaName))])(
    "%s judges every example as spec/ does",
    (name) => {
      const schema = componentSchemas[name];
      expect(schema, `components/schemas/${name}`).toBeDefined();
      const validate = ajv.compile(schema as Node);
      for (const example of examples.filter((entry) => entry.schemaName === name)) {
        expect(validate(example.body), example.file).toBe(example.valid);
      }
    },
  );
});

describe("allSchemas", () => {
  it("are the spec's schema files, unchanged", () => {
    expect(allSchemas).toEqual(loadSchemaFiles().map((entry) => entry.schema));
  });

  it("compile together in one strict Ajv and resolve their refs between files", () => {
    const ajv = createSpecAjv(allSchemas);
    for (const schema of allSchemas) {
      expect(ajv.getSchema(schema.$id), schema.$id).toBeTypeOf("function");
    }
  });
});

describe("the precompiled validators", () => {
  // Formats are the one thing they leave out; no example here hinges on a format alone but one.
  const formatOnly = new Set(["ToolAuthorizationChallenge/invalid/url-not-a-uri.json"]);
  const examples = loadExamples();

  it.each([...new Set(examples.map((example) => example.schemaName))])(
    "validate%s judges every example as spec/ does",
    (name) => {
      const validate = (validators as Record<string, unknown>)[`validate${name}`] as (value: unknown) => boolean;
      expect(validate, `validate${name}`).toBeTypeOf("function");
      for (const example of examples.filter((entry) => entry.schemaName === name)) {
        const expected = formatOnly.has(example.file.replace(/^examples\//, "")) ? true : example.valid;
        expect(validate(example.body), example.file).toBe(expected);
      }
    },
  );
});
