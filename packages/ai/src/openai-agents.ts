/** @otc/ai for OpenAI's Agents SDK: an OXP server's tools as the SDK's own function tools. */

import {
  type FunctionTool,
  type FunctionToolResult,
  type RunItem,
  type ToolErrorFormatter,
  type ToolsToFinalOutputResult,
  type ToolToFinalOutputFunction,
  tool,
  toolNamespace,
} from "@openai/agents";
import type { OxpClient } from "@otc/client";
import { parseToolId, type ToolAuthorizationChallenge } from "@otc/types";
import { loadingOf, type OxpToolOutcome, type OxpToolSpec, type OxpToolsOptions, oxpToolSpecs } from "./core.js";
import { type OxpToolLoader, oxpToolLoader, SEARCH_TOOL_NAME } from "./tool-loader.js";

export type { OxpApproval, OxpToolLoading, OxpToolsOptions } from "./core.js";
export type { OxpFoundTool, OxpToolSearchResult } from "./tool-loader.js";

/** What an OXP tool's output item carries in its `customData.oxp`: how the call ended, for the application. */
export interface OxpOutputData {
  /** The outcome's kind: `value`, `tool-error`, `invalid-input` or `authorization`. */
  kind: OxpToolOutcome["kind"];
  /** The tool's id, with its version. */
  toolId: string;
  /** For `authorization`: where the user authorizes (`url`) and where its status shows (`check_url`). */
  challenges?: ToolAuthorizationChallenge[];
}

/**
 * Lists the server's tools and makes each an Agents SDK function tool. Its parameters are the tool's JSON Schema as
 * the server gives it (non-strict: OpenAI's strict mode would rewrite optional properties); destructive tools (or
 * those `approval` picks) need approval, so a run stops with an interruption until the call is approved. The model
 * reads a value, a tool's error or a wrong input as the call's output, and an authorization to ask for as a message
 * with its URL; {@link oxpStopOnAuthorization} ends the run there instead. Errors the model cannot act on (the
 * server unreachable, its credentials refused) fail the run.
 *
 * With `loading: "provider"`, every tool has `deferLoading: true` and sits in a namespace named after its toolkit
 * (`toolNamespace`, described by the server's `GET /toolkits` where it offers search): add the SDK's
 * `toolSearchTool()` to the agent's tools, and OpenAI's tool search (Responses API) loads them. With `loading:
 * "server"`, the array holds one tool, `search_tools`, backed by the server's search: the tools it finds are pushed
 * onto this same array, which the agent reads again at each turn (give the agent the array itself, not a copy), and
 * {@link oxpRunOptions} lets a run go on when the model calls a tool not loaded yet.
 *
 * @example
 * const tools = await oxpTools(client, { loading: "server" });
 * const agent = new Agent({ name: "Assistant", model, tools });
 * const result = await run(agent, "Add 7 to the counter", oxpRunOptions(tools));
 */
export async function oxpTools(client: OxpClient, options: OxpToolsOptions = {}): Promise<FunctionTool[]> {
  const loading = loadingOf(options);
  if (loading === "server") {
    return searchingTools(await oxpToolLoader(client, options));
  }
  const specs = await oxpToolSpecs(client, options);
  const tools = specs.map((spec) => toFunctionTool(spec, loading === "provider"));
  const names = new Set<string>();
  for (const [index, made] of tools.entries()) {
    // The SDK turns every character but letters and digits into `_`: `a-b` and `a_b` would be one tool.
    if (names.has(made.name)) {
      throw new Error(`Two of the tools selected, or ${specs[index]?.definition.id}, take the name ${made.name}`);
    }
    names.add(made.name);
  }
  return loading === "provider" ? await inNamespaces(client, specs, tools, options.signal) : tools;
}

/**
 * The tools in a namespace per toolkit, in the order listed, as OpenAI's tool search takes a large catalog: the model
 * reads each namespace's description and loads a toolkit's tools together. A namespace needs a description: the
 * server's (`GET /toolkits`, where it offers search), else one naming the toolkit.
 */
async function inNamespaces(
  client: OxpClient,
  specs: readonly OxpToolSpec[],
  tools: readonly FunctionTool[],
  signal: AbortSignal | undefined,
): Promise<FunctionTool[]> {
  const described = (await client.discover({ signal })).extensions.includes("search")
    ? new Map((await client.listToolkits({ signal })).map((toolkit) => [toolkit.name, toolkit.description]))
    : new Map<string, string | undefined>();
  const byToolkit = new Map<string, FunctionTool[]>();
  for (const [index, made] of tools.entries()) {
    const toolkit = parseToolId((specs[index] as OxpToolSpec).definition.id)?.toolkit ?? "";
    byToolkit.set(toolkit, [...(byToolkit.get(toolkit) ?? []), made]);
  }
  return [...byToolkit].flatMap(([toolkit, members]) =>
    toolkit === ""
      ? members
      : toolNamespace({
          name: toolkit,
          description: described.get(toolkit) ?? `The ${toolkit} tools.`,
          tools: members,
        }),
  );
}

function toFunctionTool(spec: OxpToolSpec, deferred: boolean): FunctionTool {
  // From execute to customDataExtractor, which sees a copy of the call: the outcome by the run (its RunContext, the
  // one object both are given) and the call's id. Keyed by the id alone, two runs sharing the tools whose models
  // reuse call ids (`call_0`) would read each other's outcome; and an outcome the SDK never extracts (a call cut
  // short by a sibling's failure) goes with its run instead of staying for the tools' life.
  const outcomes = new WeakMap<object, Map<string, OxpToolOutcome>>();
  const made = tool({
    name: spec.name,
    description: spec.description,
    // The SDK types a non-strict schema as `additionalProperties: true`, but sends any JSON Schema as it is.
    parameters: spec.inputSchema as unknown as NonStrictParameters,
    strict: false,
    // Hidden from the model until tool search (OpenAI's, with toolSearchTool()) loads it.
    ...(deferred ? { deferLoading: true } : {}),
    needsApproval: spec.needsApproval,
    // null: an error the model cannot act on fails the run rather than reading "An error occurred" to the model.
    errorFunction: null,
    execute: async (input, runContext, details) => {
      // Not the model's call id as OXP's call_id: a model may repeat its ids across conversations, and the server
      // would answer a new call with an old call's stored response. The client makes one, kept across its retries.
      const outcome = await spec.call(input, { signal: details?.signal });
      const callId = details?.toolCall?.callId;
      if (callId !== undefined && runContext !== undefined) {
        const ofRun = outcomes.get(runContext) ?? new Map<string, OxpToolOutcome>();
        outcomes.set(runContext, ofRun.set(callId, outcome));
      }
      return outcome.text;
    },
    customDataExtractor: ({ runContext, toolCall }) => {
      const ofRun = outcomes.get(runContext);
      const outcome = ofRun?.get(toolCall.callId);
      ofRun?.delete(toolCall.callId);
      if (outcome === undefined) {
        return undefined;
      }
      const data: OxpOutputData = { kind: outcome.kind, toolId: spec.definition.id };
      if (outcome.kind === "authorization") {
        data.challenges = outcome.challenges;
      }
      return { oxp: data };
    },
  });
  // As the SDK's own `Tool` type takes it: the schema's type parameter only types `needsApproval`'s input.
  return made as unknown as FunctionTool;
}

/** What an array made with `loading: "server"` loads its tools with: {@link oxpRunOptions} finds it by the array. */
interface Searching {
  loader: OxpToolLoader;
  /** The array's tool for a loaded spec, pushed onto it when it is not there yet. */
  add(spec: OxpToolSpec): void;
}

const searchingArrays = new WeakMap<readonly FunctionTool[], Searching>();

/**
 * The array of `loading: "server"`: `search_tools`, and the tools it loads. The agent keeps the array it was given and
 * lists its tools again before each model call, so a tool pushed during a turn is offered from the next one.
 */
function searchingTools(loader: OxpToolLoader): FunctionTool[] {
  const tools: FunctionTool[] = [];
  const added = new Set<string>();
  const add = (spec: OxpToolSpec) => {
    if (added.has(spec.name)) {
      return;
    }
    added.add(spec.name);
    const made = toFunctionTool(spec, false);
    // A name the SDK makes the same as a tool's already there (`a-b`, `a_b`) is left out.
    if (!tools.some((present) => present.name === made.name)) {
      tools.push(made);
    }
  };
  const search = tool({
    name: SEARCH_TOOL_NAME,
    description: loader.searchTool.description,
    parameters: loader.searchTool.inputSchema as unknown as NonStrictParameters,
    strict: false,
    errorFunction: null,
    execute: async (input, _runContext, details) => {
      const outcome = await loader.search(input, { signal: details?.signal });
      if (outcome.kind === "value") {
        for (const spec of outcome.loaded) {
          add(spec);
        }
      }
      return outcome.text;
    },
  });
  tools.push(search as unknown as FunctionTool);
  searchingArrays.set(tools, { loader, add });
  return tools;
}

/** The run options {@link oxpRunOptions} answers: spread them into `run(agent, input, options)`. */
export interface OxpRunOptions {
  toolNotFoundBehavior: "return_error_to_model";
  toolErrorFormatter: ToolErrorFormatter;
}

/**
 * Run options for an agent whose tools are `oxpTools(client, { loading: "server" })`: when the model calls a tool not
 * loaded yet (one no search found, or a name it remembers from an earlier run), the run goes on rather than failing:
 * the tool is loaded from the server onto the array, and the model reads that it did not run and may call it again
 * (it is offered from the next turn, asking the user's approval as any other where it needs it). A name the server does
 * not have reads as the SDK says it; `toolErrorFormatter`, the application's own, formats every other tool error.
 *
 * @example
 * const result = await run(agent, "Add 7 to the counter", { ...oxpRunOptions(tools), maxTurns: 8 });
 */
export function oxpRunOptions(
  tools: readonly FunctionTool[],
  options: { toolErrorFormatter?: ToolErrorFormatter } = {},
): OxpRunOptions {
  const searching = searchingArrays.get(tools);
  if (searching === undefined) {
    throw new TypeError('oxpRunOptions takes the tools of oxpTools(client, { loading: "server" })');
  }
  return {
    toolNotFoundBehavior: "return_error_to_model",
    toolErrorFormatter: async (args) => {
      if (args.kind === "tool_not_found" && args.toolType === "function") {
        const spec = await searching.loader.load(args.toolName);
        if (spec !== undefined) {
          searching.add(spec);
          return `Error: ${spec.name} was not loaded yet, so it did not run. It is loaded now: call it again with the same arguments.`;
        }
      }
      return options.toolErrorFormatter?.(args);
    },
  };
}

type NonStrictParameters = {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: true;
};

/** How an OXP tool's call ended, from its output item (in `result.newItems`) or tool result; else undefined. */
export function oxpOutputData(item: RunItem | FunctionToolResult): OxpOutputData | undefined {
  const runItem = "runItem" in item ? item.runItem : item;
  if (runItem.type !== "tool_call_output_item") {
    return undefined;
  }
  const data = runItem.customData?.oxp as OxpOutputData | undefined;
  return typeof data?.kind === "string" ? data : undefined;
}

/**
 * An agent's `toolUseBehavior` that ends the run when an OXP tool needs the user's authorization: the run's
 * `finalOutput` is the message with the URL to open, and the output item's {@link oxpOutputData} holds the
 * challenges. Once the user has authorized, run again with the history (and a message saying so). Otherwise the
 * model runs again, as by default.
 */
export const oxpStopOnAuthorization: ToolToFinalOutputFunction = (_context, toolResults): ToolsToFinalOutputResult => {
  const messages = toolResults.flatMap((result) =>
    result.type === "function_output" && oxpOutputData(result)?.kind === "authorization" ? [String(result.output)] : [],
  );
  return messages.length === 0
    ? { isFinalOutput: false, isInterrupted: undefined }
    : { isFinalOutput: true, isInterrupted: undefined, finalOutput: messages.join("\n\n") };
};
