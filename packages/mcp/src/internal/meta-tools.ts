/**
 * The bridge's tool search meta-tools (its `toolSearch` option, docs/protocol.md 9.5): `search-tools`, a ranked search
 * of the OXP catalog (the server's `GET /tools?q=&view=summary`), and `load-tools`, the full MCP definitions of tools
 * by name, for MCP clients without a tool search of their own. Their definitions, argument checks and results.
 */
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/server";
import { LOAD_TOOLS_NAME, SEARCH_TOOLS_NAME } from "../names.js";

/** The most tools one search answers, as the OXP server takes it (`[search.query]`). */
export const MAX_SEARCH_LIMIT = 50;
/** How many tools a search answers without a `limit`, as the OXP server does (`[search.query]`). */
export const DEFAULT_SEARCH_LIMIT = 10;
/** The longest query the OXP server takes (`[search.bounds]`). */
export const MAX_QUERY_LENGTH = 256;
/** The most names one `load-tools` call takes: as many as the OXP server's `ids=` (`[search.ids]`). */
export const MAX_LOAD_NAMES = 100;

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** The MCP tool `search-tools`. */
export const SEARCH_TOOL: McpTool = {
  name: SEARCH_TOOLS_NAME,
  title: "Search tools",
  description:
    "Finds the tools that fit a task among all of this server's tools, best first. Give what you want done in a " +
    'few words ("send an email", "convert a currency"); the answer names each tool found, with its description, ' +
    `toolkit and score. Call a tool found by its name, or get its input schema first with ${LOAD_TOOLS_NAME}.`,
  inputSchema: {
    type: "object",
    properties: {
      query: {
        type: "string",
        minLength: 1,
        maxLength: MAX_QUERY_LENGTH,
        description: "What the tool should do, in a few words.",
      },
      toolkit: { type: "string", description: "Only the tools of this toolkit (as the results name it)." },
      limit: {
        type: "integer",
        minimum: 1,
        maximum: MAX_SEARCH_LIMIT,
        description: "The most tools to answer (default 10).",
      },
    },
    required: ["query"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      tools: {
        type: "array",
        items: {
          type: "object",
          properties: {
            name: { type: "string" },
            title: { type: "string" },
            description: { type: "string" },
            toolkit: { type: "string" },
            score: { type: "number" },
          },
          required: ["name", "description", "toolkit", "score"],
        },
      },
    },
    required: ["tools"],
  },
  annotations: { title: "Search tools", ...READ_ONLY },
};

/** The MCP tool `load-tools`. */
export const LOAD_TOOL: McpTool = {
  name: LOAD_TOOLS_NAME,
  title: "Load tools",
  description:
    `Gives the full definitions of tools by name (as ${SEARCH_TOOLS_NAME} names them): each one's description, ` +
    "input schema and, where it has one, output schema, so that you can call it with the right arguments.",
  inputSchema: {
    type: "object",
    properties: {
      names: {
        type: "array",
        items: { type: "string" },
        minItems: 1,
        maxItems: MAX_LOAD_NAMES,
        description: "The names of the tools to load.",
      },
    },
    required: ["names"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      tools: { type: "array", items: { type: "object" } },
      unknown: { type: "array", items: { type: "string" } },
    },
    required: ["tools"],
  },
  annotations: { title: "Load tools", ...READ_ONLY },
};

/** The meta-tools as tools/list lists them: first, so that a host that keeps only the first tools keeps them. */
export const META_TOOLS: readonly McpTool[] = [SEARCH_TOOL, LOAD_TOOL];

/** A search's arguments, checked. */
export interface SearchArguments {
  query: string;
  toolkit?: string;
  limit?: number;
}

/** A meta-tool's arguments that cannot be used: a tool error the model can correct, saying what is wrong. */
export const argumentError = (text: string): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: `Invalid arguments: ${text}` }],
});

/** The arguments of a `search-tools` call, or the error to answer. */
export function searchArguments(args: Record<string, unknown>): SearchArguments | CallToolResult {
  const { query, toolkit, limit } = args;
  if (typeof query !== "string" || query.trim() === "") {
    return argumentError('query must be a string with at least one word, e.g. "send an email".');
  }
  if (query.length > MAX_QUERY_LENGTH) {
    return argumentError(`query must be at most ${MAX_QUERY_LENGTH} characters.`);
  }
  if (toolkit !== undefined && (typeof toolkit !== "string" || toolkit === "")) {
    return argumentError("toolkit must be a toolkit's name, as the results give it.");
  }
  if (
    limit !== undefined &&
    !(Number.isSafeInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_SEARCH_LIMIT)
  ) {
    return argumentError(`limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}.`);
  }
  return {
    query,
    ...(toolkit === undefined ? {} : { toolkit: toolkit as string }),
    ...(limit === undefined ? {} : { limit: limit as number }),
  };
}

/** The names of a `load-tools` call, or the error to answer. */
export function loadArguments(args: Record<string, unknown>): string[] | CallToolResult {
  const { names } = args;
  if (
    !Array.isArray(names) ||
    names.length === 0 ||
    names.length > MAX_LOAD_NAMES ||
    !names.every((name) => typeof name === "string")
  ) {
    return argumentError(`names must be a list of 1 to ${MAX_LOAD_NAMES} tool names.`);
  }
  return names as string[];
}

/** One tool found, as `search-tools` answers it. */
export interface FoundTool {
  name: string;
  title?: string;
  description: string;
  toolkit: string;
  score: number;
}

/** A meta-tool's answer: the value as structuredContent and as JSON text, as the bridge answers every tool's value. */
export function metaResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

/** A tool as `load-tools` gives it: what a model needs to call it, without the bridge's `_meta`. */
export function loadedTool(tool: McpTool): Omit<McpTool, "_meta"> {
  const { _meta: _ignored, ...rest } = tool;
  return rest;
}
