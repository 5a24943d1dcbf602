/**
 * The work every stack serves: the demo catalog, 1,000 tools or the search rows' 10,000, the wire tool list, and the
 * peers' schemas and tool functions.
 */
import { readFileSync } from "node:fs";
import { demoTools } from "@otc/demo/tools";
import { defineTool } from "@otc/server";
import { OxpCore } from "@otc/server/core";
import { searchCatalogSpecs } from "./search-catalog.mjs";

/** How many tools the large catalog holds, the demo's included. */
export const LARGE_CATALOG = 1_000;
/** How many tools the search catalog holds, the demo's included. */
export const SEARCH_CATALOG = 10_000;

/** Generated tools, each with a small input and output schema like a real integration's. */
function generatedTools(count) {
  return Array.from({ length: count }, (_, i) => {
    const n = String(i + 1).padStart(4, "0");
    return defineTool({
      toolkit: `Gen${n.slice(0, 2)}`,
      name: `Tool${n}`,
      version: "1.0.0",
      description: `Generated tool ${n}: looks a record up by id and returns its label.`,
      inputSchema: {
        type: "object",
        properties: {
          id: { type: "string", description: "The record id." },
          limit: { type: "integer", minimum: 1, maximum: 100, description: "How many records at most." },
        },
        required: ["id"],
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { label: { type: "string" } },
        required: ["label"],
        additionalProperties: false,
      },
      run: ({ id }) => ({ label: `record ${id}` }),
    });
  });
}

/** What a generated search tool answers: no call is measured on that catalog, but each tool must be callable. */
const searchResult = () => ({ id: "bench", url: "https://example.invalid/bench" });

/**
 * The tools of a catalog: `demo` (the demo app's), `large` (the demo's plus generated ones, 1,000 in all) or `search`
 * (the demo's plus generated ones of varied text, 10,000 in all: bench/stacks/search-catalog.mjs).
 */
export function catalogTools(catalog) {
  const demo = demoTools();
  if (catalog === "large") {
    return [...demo, ...generatedTools(LARGE_CATALOG - demo.length)];
  }
  if (catalog === "search") {
    return [
      ...demo,
      ...searchCatalogSpecs(SEARCH_CATALOG - demo.length).map((spec) => defineTool({ ...spec, run: searchResult })),
    ];
  }
  return demo;
}

/**
 * The search catalog's definitions as a server offering search indexes them (every field, every extension's), built
 * without a server: compiling 10,000 tools' validators takes tens of seconds, and the index reads none of them. The
 * generated tools' definitions are their specs in wire form (plain JSON Schemas, no library); the demo's come from
 * the core.
 */
export function searchDefinitions() {
  const demo = new OxpCore({ tools: demoTools() }).registry.list({ annotations: true, scopes: true });
  const generated = searchCatalogSpecs(SEARCH_CATALOG - demo.length).map((spec) => ({
    id: `${spec.toolkit}.${spec.name}@${spec.version}`,
    name: `${spec.toolkit}_${spec.name}`,
    description: spec.description,
    version: spec.version,
    input_schema: spec.inputSchema,
    output_schema: spec.outputSchema,
    annotations: spec.annotations,
  }));
  return [...demo, ...generated];
}

/** The GET /tools body of a catalog as our core builds it, so a peer serves the same bytes. */
export function wireToolList(catalog) {
  return new OxpCore({ tools: catalogTools(catalog) }).listTools();
}

/**
 * A peer's tool list: read from `listFile` when the parent wrote one (building the 1,000-tool list means
 * compiling 1,000 validators in our core, seconds a peer should not pay at start), else built here.
 */
export function peerToolList({ catalog, listFile }) {
  return listFile ? JSON.parse(readFileSync(listFile, "utf8")) : wireToolList(catalog);
}

/** A peer's CallToolRequest schema: the fields a call carries, nothing else. */
export const callRequestSchema = {
  type: "object",
  properties: {
    tool_id: { type: "string", minLength: 1, maxLength: 256 },
    call_id: { type: "string", minLength: 1, maxLength: 256 },
    trace_id: { type: "string", maxLength: 256 },
    input: { type: "object" },
    context: { type: "object" },
  },
  required: ["tool_id"],
  additionalProperties: false,
};

/** Thrown by a peer's tool to fail on purpose, as a tool throws OxpToolError with us. */
export class PeerToolError extends Error {
  constructor(message, fields) {
    super(message);
    this.fields = fields;
  }
}

const KNOWN_DOORBELLS = ["doorbell42", "doorbell84"];

/**
 * The tools a peer runs, by the ids the scenarios call (bare and versioned), from its tool list: the same input
 * schemas and the same work as the demo's Calculator.Add and Doorbell.Ring.
 */
export function peerTools(list) {
  const byName = new Map(list.items.map((item) => [item.id.split("@")[0], item]));
  const add = {
    definition: byName.get("Calculator.Add"),
    run: ({ a, b }) => a + b,
  };
  const ring = {
    definition: byName.get("Doorbell.Ring"),
    run: ({ doorbell_id }) => {
      if (!KNOWN_DOORBELLS.includes(doorbell_id)) {
        throw new PeerToolError("Doorbell ID not found", {
          developer_message: `The doorbell with ID '${doorbell_id}' does not exist.`,
          can_retry: true,
          additional_prompt_content: `ids: ${KNOWN_DOORBELLS.join(",")}`,
          retry_after_ms: 500,
        });
      }
      return null;
    },
  };
  return new Map([
    ["Calculator.Add", add],
    ["Calculator.Add@1.0.0", add],
    ["Doorbell.Ring", ring],
    ["Doorbell.Ring@0.1.0", ring],
  ]);
}

/** Runs a peer tool and shapes the answer as a CallToolResponse, tool failures included. */
export async function runPeerTool(tool, input, callId) {
  const started = performance.now();
  try {
    const value = await tool.run(input);
    return { call_id: callId, duration: performance.now() - started, success: true, value };
  } catch (error) {
    if (!(error instanceof PeerToolError)) {
      throw error;
    }
    return {
      call_id: callId,
      duration: performance.now() - started,
      success: false,
      error: { message: error.message, ...error.fields },
    };
  }
}

/** The 422 body for input that breaks the tool's schema, from Ajv's errors. */
export function inputErrors(errors) {
  const parameter_errors = {};
  for (const error of errors ?? []) {
    const name = error.instancePath.slice(1) || error.params?.missingProperty || "input";
    parameter_errors[name] ??= error.message ?? "is invalid";
  }
  return { message: "Some input parameters are invalid", parameter_errors };
}
