/** @otc/ai/vercel: an OXP server's tools as the Vercel AI SDK's own tools, for generateText, streamText and its agents. */
import { type OxpClient, OxpToolCallError } from "@otc/client";
import type { ToolAuthorizationChallenge } from "@otc/types";
import {
  type ContentPart,
  dynamicTool,
  type JSONSchema7,
  jsonSchema,
  NoSuchToolError,
  type StopCondition,
  type Tool,
  type ToolCallRepairFunction,
  type ToolSet,
} from "ai";
import { loadingOf, type OxpToolSpec, type OxpToolsOptions, oxpToolSpecs } from "./core.js";
import { type OxpToolLoader, oxpToolLoader, SEARCH_TOOL_NAME } from "./tool-loader.js";

/**
 * What an OXP tool's `execute` throws when the call ends without a value: @otc/client's own class, so that one
 * `instanceof` tells it beside a typed binding's. The SDK makes it a `tool-error` part (the UI's `output-error`), and
 * the model's next turn reads its message: the outcome's text, which says what went wrong and what to do (correct the
 * input, retry, or ask the user to open an authorization link). Its `outcome` says how the call ended.
 */
export { type OxpFailedOutcome, OxpToolCallError } from "@otc/client";
export type { OxpApproval, OxpCallContext, OxpToolLoading, OxpToolOutcome, OxpToolsOptions } from "./core.js";
export type { OxpFoundTool, OxpToolSearchResult } from "./tool-loader.js";

/**
 * Lists the server's tools and makes each an AI SDK dynamic tool, keyed by its model name: pass the set as
 * `tools` to generateText, streamText or an agent. A destructive tool (by default) asks the user's approval first:
 * the SDK answers a `tool-approval-request` instead of running it (with a `toolApproval` of the app's own, give it
 * {@link oxpToolApproval}). A value is the tool's output; anything else throws an {@link OxpToolCallError} from
 * `execute`, which the model reads as the tool's error. Other errors (the server unreachable, a 401) throw as the
 * client throws them, and the model reads their message likewise. Aborting the run cancels a running call on the
 * server, where it offers the tasks extension.
 *
 * With `loading: "provider"`, every tool has `deferLoading: true`: add the SDK's own `toolSearch()` to the set, and the
 * model finds them through it. With `loading: "server"`, the set holds one tool, `search_tools`, backed by the
 * server's search: the tools it finds are added to this same set, so the next step offers them (pass the set itself
 * as `tools`, not a copy), and {@link oxpRepairToolCall} as `repairToolCall` loads a tool the model calls before any
 * search found it.
 *
 * @example
 * const tools = await oxpTools(client, { loading: "server" });
 * await generateText({ model, tools, repairToolCall: oxpRepairToolCall(tools), stopWhen: isStepCount(5), prompt });
 */
export async function oxpTools(client: OxpClient, options: OxpToolsOptions = {}): Promise<ToolSet> {
  const loading = loadingOf(options);
  if (loading === "server") {
    return searchingTools(await oxpToolLoader(client, options));
  }
  const specs = await oxpToolSpecs(client, options);
  const tools: ToolSet = {};
  for (const spec of specs) {
    tools[spec.name] = toDynamicTool(spec, loading === "provider");
  }
  return tools;
}

/** An OXP tool as an AI SDK dynamic tool; `deferred`, hidden from the model until the SDK's `toolSearch()` finds it. */
function toDynamicTool(spec: OxpToolSpec, deferred: boolean): Tool {
  return dynamicTool({
    description: spec.description,
    inputSchema: jsonSchema(spec.inputSchema as JSONSchema7),
    ...(deferred ? { deferLoading: true } : {}),
    // Deprecated in v7 in favour of generateText's `toolApproval`, which takes precedence (a function there
    // decides for every tool; an object's own entry for its tool), but still honoured by generateText, streamText
    // and the agents: the only way a tool can carry its own default. oxpToolApproval gives it to `toolApproval`.
    needsApproval: spec.needsApproval,
    // Not sent to the model: tool-call and tool-result parts carry it, so an app can tell which OXP tool ran, and
    // oxpToolApproval reads whether it asks the user first.
    metadata: { oxpToolId: spec.definition.id, oxpNeedsApproval: spec.needsApproval },
    execute: async (input, { abortSignal }) => {
      // No call_id from the SDK's toolCallId: providers do not all make it unique (some number calls per
      // response, `call_0`), and the server keeps a call_id's answer for 24 hours per principal, so a repeat from
      // another conversation would get that conversation's answer. The client makes one per call and keeps it
      // across its own retries.
      const outcome = await spec.call(input, { signal: abortSignal });
      if (outcome.kind === "value") {
        return outcome.value;
      }
      throw new OxpToolCallError(outcome);
    },
  });
}

/** What a set made with `loading: "server"` loads its tools with: {@link oxpRepairToolCall} finds it by the set. */
interface Searching {
  loader: OxpToolLoader;
  /** The set's tool for a loaded spec, added to the set when it is not there yet. */
  add(spec: OxpToolSpec): Tool;
}

const searchingSets = new WeakMap<ToolSet, Searching>();

/**
 * The set of `loading: "server"`: `search_tools`, and the tools it loads. generateText reads the set it was given
 * again at each step (the SDK's own tool search does the same with its deferred tools), so a tool added during a
 * step is offered to the model from the next one.
 */
function searchingTools(loader: OxpToolLoader): ToolSet {
  const tools: ToolSet = {};
  const add = (spec: OxpToolSpec) => {
    tools[spec.name] ??= toDynamicTool(spec, false);
    return tools[spec.name] as Tool;
  };
  tools[SEARCH_TOOL_NAME] = dynamicTool({
    description: loader.searchTool.description,
    inputSchema: jsonSchema(loader.searchTool.inputSchema as JSONSchema7),
    execute: async (input, { abortSignal }) => {
      const outcome = await loader.search(input, { signal: abortSignal });
      if (outcome.kind === "invalid-input") {
        throw new SearchInputError(outcome.text);
      }
      for (const spec of outcome.loaded) {
        add(spec);
      }
      return outcome.result;
    },
  });
  searchingSets.set(tools, { loader, add });
  return tools;
}

/** A search the model can correct; the SDK gives the model `String(error)`, which is the text written for it. */
class SearchInputError extends Error {
  override name = "SearchInputError";

  override toString(): string {
    return this.message;
  }
}

/**
 * A `repairToolCall` for generateText, streamText or an agent, given the set of `oxpTools(client, { loading:
 * "server" })`: when the model calls a tool not loaded yet (one a search never found, or a name it remembers), it loads
 * that tool from the server into the set, and the call goes on as if it had been loaded (asking the user's approval
 * first where the tool needs it). Anything else goes to `repair`, the application's own, if given. Not with
 * `experimental_toolCallers`, whose copies of the set would not hold the tool loaded.
 *
 * @example
 * const tools = await oxpTools(client, { loading: "server" });
 * await generateText({ model, tools, repairToolCall: oxpRepairToolCall(tools), stopWhen: isStepCount(5), prompt });
 */
export function oxpRepairToolCall(
  tools: ToolSet,
  repair?: ToolCallRepairFunction<ToolSet>,
): ToolCallRepairFunction<ToolSet> {
  const searching = searchingSets.get(tools);
  if (searching === undefined) {
    throw new TypeError('oxpRepairToolCall takes the tools of oxpTools(client, { loading: "server" })');
  }
  return async (options) => {
    if (NoSuchToolError.isInstance(options.error)) {
      const spec = await searching.loader.load(options.toolCall.toolName, { signal: options.abortSignal });
      if (spec !== undefined) {
        // The SDK parses the call again against the step's tools it gave here, and runs it from them: the set itself
        // unless `activeTools` narrowed it into a copy, which needs the tool too.
        (options.tools as ToolSet)[spec.name] = searching.add(spec);
        return options.toolCall;
      }
    }
    return repair === undefined ? null : repair(options);
  };
}

/** An OXP tool's approval as `toolApproval` takes it: `user-approval` (ask first) or `not-applicable`. */
export type OxpToolApprovalStatus = "user-approval" | "not-applicable";

/**
 * The `toolApproval` entries of the OXP tools among `tools`, by name: each tool's own approval (see the `approval`
 * option), for generateText's, streamText's or an agent's `toolApproval`, which takes precedence over the tools'
 * `needsApproval`. Spread it under an app's own entries, or fall back to it from an app's function, so that setting
 * `toolApproval` for one tool does not drop every OXP tool's approval. Tools that are not OXP tools are left out.
 *
 * @example
 * const oxp = oxpToolApproval(tools);
 * await generateText({ model, tools, prompt, toolApproval: { ...oxp, deleteFile: "user-approval" } });
 * // or, with a function, which decides for every tool:
 * await generateText({
 *   model,
 *   tools,
 *   prompt,
 *   toolApproval: ({ toolCall }) => (toolCall.toolName === "deleteFile" ? "user-approval" : oxp[toolCall.toolName]),
 * });
 */
export function oxpToolApproval(tools: ToolSet): Record<string, OxpToolApprovalStatus> {
  const entries = Object.entries(tools).flatMap(([name, tool]) => {
    const metadata = (tool as { metadata?: { oxpToolId?: unknown; oxpNeedsApproval?: unknown } }).metadata;
    if (typeof metadata?.oxpToolId !== "string") {
      return [];
    }
    return [[name, metadata.oxpNeedsApproval === true ? "user-approval" : "not-applicable"] as const];
  });
  return Object.fromEntries(entries);
}

/** The authorization challenges of a step's (or a result's) content: the links the user must open. */
export function oxpAuthorizationChallenges(content: readonly ContentPart<ToolSet>[]): ToolAuthorizationChallenge[] {
  return content.flatMap((part) =>
    part.type === "tool-error" && part.error instanceof OxpToolCallError && part.error.outcome.kind === "authorization"
      ? part.error.outcome.challenges
      : [],
  );
}

/**
 * A `stopWhen` condition: stops the loop once a step's tool call needs the user's authorization, so that the app
 * shows the link itself (see {@link oxpAuthorizationChallenges}) and continues when the user has authorized,
 * rather than leaving it to the model to relay.
 */
export function hasOxpAuthorizationChallenge(): StopCondition<ToolSet> {
  return ({ steps }) => oxpAuthorizationChallenges(steps.at(-1)?.content ?? []).length > 0;
}
