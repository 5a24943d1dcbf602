/** @otc/ai/langchain: an OXP server's tools as LangChain.js's own tools (@langchain/core 1.x `DynamicStructuredTool`s). */

import { ToolMessage } from "@langchain/core/messages";
import { DynamicStructuredTool, type StructuredToolInterface, type ToolRunnableConfig } from "@langchain/core/tools";
import type { OxpClient } from "@otc/client";
import type { CallToolFailure, CallToolSuccess, ToolAnnotations, ToolAuthorizationChallenge } from "@otc/types";
import {
  loadingOf,
  type OxpToolLoading,
  type OxpToolOutcome,
  type OxpToolSpec,
  type OxpToolsOptions,
  oxpToolSpecs,
} from "./core.js";
import { type OxpToolLoader, type OxpToolSearchResult, oxpToolLoader, SEARCH_TOOL_NAME } from "./tool-loader.js";

export type { OxpApproval, OxpToolLoading, OxpToolsOptions } from "./core.js";
export type { OxpFoundTool, OxpToolSearchResult } from "./tool-loader.js";

/** Options of LangChain's `oxpTools`: those of every framework, and how an authorization challenge stops the run. */
export interface OxpLangChainToolsOptions extends OxpToolsOptions {
  /**
   * What a call that needs the user's authorization does. `"interrupt"` (the default): inside a LangGraph graph with
   * a checkpointer (`createAgent` with one, a ToolNode), the run stops with LangGraph's `interrupt` carrying an
   * {@link OxpAuthorizationRequest}; resumed with `new Command({ resume: { type: "authorized" } })`, the tool calls
   * the server again and answers the real result. Elsewhere (a plain `tool.invoke`, a graph without a
   * checkpointer), and always with `"message"`, the tool answers a ToolMessage with `status: "error"`, the URL for
   * the model to relay, and an artifact of kind `authorization`.
   */
  authorization?: "interrupt" | "message";
}

/** What each tool's `metadata.oxp` holds: which OXP tool it is, its annotations, and whether to ask the user first. */
export interface OxpToolMetadata {
  /** The tool's id with its version, as the server lists it: `Toolkit.Tool@1.2.0`. */
  toolId: string;
  version: string;
  /** The server's behaviour hints (read_only, destructive, idempotent, open_world), where it offers them. */
  annotations?: ToolAnnotations;
  /** Whether the user approves each call first: see {@link oxpInterruptOn}. */
  needsApproval: boolean;
}

/**
 * The `artifact` of each ToolMessage: what the model does not read but the application may, as plain JSON (a
 * checkpointer stores it): the server's response, the properties a 422 named, or the links the user must open.
 */
export type OxpToolArtifact =
  | { kind: "value"; response: CallToolSuccess }
  | { kind: "tool-error"; response: CallToolFailure }
  | { kind: "invalid-input"; parameterErrors: Readonly<Record<string, string>> }
  | { kind: "authorization"; challenges: ToolAuthorizationChallenge[] }
  /** The user declined to authorize the tool when asked (resumed with `{ type: "declined" }`); it was not called. */
  | { kind: "authorization-declined" };

/** An OXP tool as LangChain's tool: its schema is the server's JSON Schema, its `metadata.oxp` says what it is. */
export type OxpLangChainTool = DynamicStructuredTool<Record<string, unknown>> & {
  metadata: { oxp: OxpToolMetadata };
};

/**
 * The `search_tools` tool of `loading: "server"`: the model gives a query (and a toolkit, optionally); it answers the
 * tools found, each loaded now. Its ToolMessage's `artifact` is an {@link OxpSearchArtifact}.
 */
export type OxpLangChainSearchTool = DynamicStructuredTool<Record<string, unknown>> & {
  metadata: { oxpSearch: true };
};

/** The `artifact` of the search tool's ToolMessage: the tools it found (and loaded), as the model read them. */
export interface OxpSearchArtifact {
  kind: "search";
  result: OxpToolSearchResult;
}

/** What `oxpTools` answers for `loading: "server"`: the search tool first, then each tool loaded, as they load. */
export type OxpLangChainSearchingTools = (OxpLangChainSearchTool | OxpLangChainTool)[];

/**
 * The value of the interrupt an OXP tool raises when the user must authorize it (see
 * {@link OxpLangChainToolsOptions.authorization}): plain JSON, kept by the checkpointer and shown by the application.
 * It is the `value` of one of the run's `__interrupt__` entries; {@link isOxpAuthorizationRequest} tells it apart.
 */
export interface OxpAuthorizationRequest {
  kind: "oxp-authorization";
  /** The tool the model called, by the name it knows, and the OXP tool's id with its version. */
  toolName: string;
  toolId: string;
  /** The model's tool call id, where the tool was called with one. */
  toolCallId?: string;
  /** Where the user authorizes (`url`, to show as a link) and where its status shows (`check_url`). */
  challenges: ToolAuthorizationChallenge[];
}

/**
 * What to resume an {@link OxpAuthorizationRequest} with (`new Command({ resume })`): `authorized` once the user has
 * authorized, and the tool calls the server again (asking again if it still needs authorization); `declined` ends the
 * call without calling the server again, with a ToolMessage (`status: "error"`, artifact `authorization-declined`)
 * that tells the model the user did not authorize it, and `message` if given. Any other value counts as `authorized`.
 */
export type OxpAuthorizationResume = { type: "authorized" } | { type: "declined"; message?: string };

/** Whether an interrupt's value is an OXP tool's {@link OxpAuthorizationRequest}. */
export function isOxpAuthorizationRequest(value: unknown): value is OxpAuthorizationRequest {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { kind?: unknown }).kind === "oxp-authorization" &&
    Array.isArray((value as { challenges?: unknown }).challenges)
  );
}

/** The tag every OXP tool carries, and the one those that need approval carry too (they reach callbacks and traces). */
export const OXP_TAG = "oxp";
export const NEEDS_APPROVAL_TAG = "oxp:needs-approval";

/**
 * Lists the server's tools and makes each LangChain's own tool, for `model.bindTools(tools)`, `createAgent` or a
 * ToolNode. Invoked with a model's tool call, each answers a ToolMessage whose content the model reads: the value
 * as text, or (with `status: "error"`) the tool's error, what a 422 found wrong, or the link the user must open to
 * authorize (inside a graph with a checkpointer, the run stops with an interrupt instead: see
 * {@link OxpLangChainToolsOptions.authorization}); the details are its {@link OxpToolArtifact}. Errors the model
 * cannot act on (the server unreachable, a 401) throw. An input LangChain itself finds not to match the schema
 * throws its `ToolInputParsingException` before any request, as for every LangChain tool; agents' tool nodes hand
 * that to the model.
 *
 * With `loading: "provider"`, each tool has `extras: { defer_loading: true }`: add the `langchain` package's
 * `providerToolSearchMiddleware()` to `createAgent`, and the provider's own tool search (OpenAI's or Anthropic's)
 * finds them. With `loading: "server"`, the array holds one tool, `search_tools` ({@link OxpLangChainSearchTool}),
 * backed by the server's search; the tools it finds are pushed onto this same array as they load. In `createAgent`,
 * add {@link oxpSearchMiddleware} to offer them to the model on its next step and to run them.
 */
export async function oxpTools(
  client: OxpClient,
  options: OxpLangChainToolsOptions & { loading: "server" },
): Promise<OxpLangChainSearchingTools>;
export async function oxpTools(
  client: OxpClient,
  options?: OxpLangChainToolsOptions & { loading?: Exclude<OxpToolLoading, "server"> },
): Promise<OxpLangChainTool[]>;
export async function oxpTools(
  client: OxpClient,
  options?: OxpLangChainToolsOptions,
): Promise<OxpLangChainTool[] | OxpLangChainSearchingTools>;
export async function oxpTools(
  client: OxpClient,
  options: OxpLangChainToolsOptions = {},
): Promise<OxpLangChainTool[] | OxpLangChainSearchingTools> {
  const loading = loadingOf(options);
  const authorization = options.authorization ?? "interrupt";
  if (loading === "server") {
    return searchingTools(await oxpToolLoader(client, options), authorization);
  }
  const specs = await oxpToolSpecs(client, options);
  return specs.map((spec) => toLangChainTool(spec, authorization, loading === "provider"));
}

/** What the tools of `loading: "server"` share: the loader, the array's tools, and those that ask approval. */
interface Searching {
  loader: OxpToolLoader;
  /** The array's tool for a loaded spec, pushed onto it when it is not there yet. */
  add(spec: OxpToolSpec): OxpLangChainTool;
  /** {@link oxpInterruptOn}'s answer for the array: one object, which each tool that needs approval joins as it loads. */
  interruptOn: Record<string, true>;
}

/** Each search tool's {@link Searching}, for {@link oxpSearchMiddleware} and {@link oxpInterruptOn} to find by the array. */
const searchings = new WeakMap<object, Searching>();

function searchingTools(loader: OxpToolLoader, authorization: "interrupt" | "message"): OxpLangChainSearchingTools {
  const tools: OxpLangChainSearchingTools = [];
  const byName = new Map<string, OxpLangChainTool>();
  const interruptOn: Record<string, true> = {};
  const add = (spec: OxpToolSpec) => {
    let made = byName.get(spec.name);
    if (made === undefined) {
      made = toLangChainTool(spec, authorization, false);
      byName.set(spec.name, made);
      tools.push(made);
      if (spec.needsApproval) {
        interruptOn[spec.name] = true;
      }
    }
    return made;
  };
  const search = new DynamicStructuredTool({
    name: SEARCH_TOOL_NAME,
    description: loader.searchTool.description,
    schema: loader.searchTool.inputSchema,
    verboseParsingErrors: true,
    metadata: { oxpSearch: true },
    tags: [OXP_TAG],
    func: async (input: unknown, _runManager: unknown, config?: ToolRunnableConfig) => {
      const outcome = await loader.search(input, { signal: config?.signal });
      if (outcome.kind === "value") {
        for (const spec of outcome.loaded) {
          add(spec);
        }
      }
      const toolCallId = config?.toolCall?.id;
      if (toolCallId === undefined) {
        return outcome.text;
      }
      return new ToolMessage({
        content: outcome.text,
        tool_call_id: toolCallId,
        name: SEARCH_TOOL_NAME,
        status: outcome.kind === "value" ? "success" : "error",
        ...(outcome.kind === "value"
          ? { artifact: { kind: "search", result: outcome.result } satisfies OxpSearchArtifact }
          : {}),
      });
    },
  }) as OxpLangChainSearchTool;
  tools.push(search);
  searchings.set(search, { loader, add, interruptOn });
  return tools;
}

/** The {@link Searching} of an array made by `loading: "server"`, found by its search tool. */
function searchingOf(tools: readonly StructuredToolInterface[]): Searching | undefined {
  for (const tool of tools) {
    const searching = searchings.get(tool);
    if (searching !== undefined) {
      return searching;
    }
  }
  return undefined;
}

/** What {@link oxpSearchMiddleware}'s `wrapModelCall` reads of the `langchain` package's ModelRequest. */
interface ModelRequestLike {
  tools: readonly unknown[];
}

/** What {@link oxpSearchMiddleware}'s `wrapToolCall` reads of the `langchain` package's ToolCallRequest. */
interface ToolCallRequestLike {
  toolCall: { name: string; id?: string };
  tool: unknown;
  runtime: { signal?: AbortSignal };
}

/**
 * A middleware of the `langchain` package's `createAgent`, as {@link oxpSearchMiddleware} makes it: written to its
 * shape (the `langchain` package is not a dependency of this one), so that `createAgent({ middleware })` takes it.
 */
export interface OxpSearchMiddleware {
  name: string;
  wrapModelCall<R extends ModelRequestLike, T>(request: R, handler: (request: R) => T): T;
  wrapToolCall<R extends ToolCallRequestLike, T>(
    request: R,
    handler: (request: R) => T | PromiseLike<T>,
  ): Promise<T | ToolMessage>;
}

/**
 * The middleware of `createAgent` that makes `loading: "server"` work there, given the array `oxpTools` answered (the
 * same array, passed as the agent's `tools` too): each model call is offered the tools searches loaded, beside the
 * agent's own, and a call to one of them runs it. A call to a tool not loaded yet loads it from the server and runs it;
 * one that needs the user's approval is loaded but not run, and the model reads that it may call it again, so that
 * `humanInTheLoopMiddleware` (with {@link oxpInterruptOn} of the array, which covers the tools as they load) asks first.
 *
 * @example
 * const tools = await oxpTools(client, { loading: "server" });
 * const agent = createAgent({ model, tools, middleware: [oxpSearchMiddleware(tools)] });
 */
export function oxpSearchMiddleware(tools: readonly StructuredToolInterface[]): OxpSearchMiddleware {
  const searching = searchingOf(tools);
  if (searching === undefined) {
    throw new TypeError('oxpSearchMiddleware takes the tools of oxpTools(client, { loading: "server" })');
  }
  const { loader, add } = searching;
  return {
    name: "OxpToolSearch",
    wrapModelCall(request, handler) {
      // The agent's tools (the search tool among them) are there already: the loaded ones are added beside them.
      const offered = new Set(request.tools.map((tool) => (tool as { name?: unknown }).name));
      const added = loader
        .loaded()
        .filter((spec) => !offered.has(spec.name))
        .map(add);
      return handler(added.length === 0 ? request : { ...request, tools: [...request.tools, ...added] });
    },
    async wrapToolCall(request, handler) {
      if (request.tool !== undefined) {
        return handler(request);
      }
      const { name, id } = request.toolCall;
      const wasLoaded = loader.isLoaded(name);
      const spec = await loader.load(name, { signal: request.runtime.signal });
      if (spec === undefined) {
        // Not one of the server's: the agent's own answer (the tool is not valid, and which are).
        return handler(request);
      }
      const tool = add(spec);
      if (!wasLoaded && spec.needsApproval) {
        // The approval middleware decided on this call before the tool was known: it runs only when called again.
        return new ToolMessage({
          content: `Error: ${name} was not loaded yet, so it did not run. It is loaded now: call it again with the same input.`,
          tool_call_id: id ?? "",
          name,
          status: "error",
        });
      }
      return handler({ ...request, tool });
    },
  };
}

/**
 * The `interruptOn` of the `langchain` package's `humanInTheLoopMiddleware`: each tool that needs approval (the
 * destructive ones by default, see {@link OxpToolsOptions.approval}) under its name, `true` (every decision allowed).
 * @langchain/core has no approval of its own; this is where LangChain 1.x asks the user before a tool runs.
 */
export function oxpInterruptOn(tools: readonly StructuredToolInterface[]): Record<string, true> {
  // The array of `loading: "server"` grows as tools load: its one record grows with it, and the middleware reads it
  // again at each call.
  const searching = searchingOf(tools);
  if (searching !== undefined) {
    return searching.interruptOn;
  }
  const entries = tools.filter((tool) => oxpMetadata(tool)?.needsApproval === true).map((tool) => [tool.name, true]);
  return Object.fromEntries(entries);
}

/** A tool's {@link OxpToolMetadata}, or undefined for a tool that is not an OXP tool. */
export function oxpMetadata(tool: StructuredToolInterface): OxpToolMetadata | undefined {
  const oxp = (tool as { metadata?: Record<string, unknown> }).metadata?.oxp;
  return typeof oxp === "object" && oxp !== null ? (oxp as OxpToolMetadata) : undefined;
}

function toLangChainTool(
  spec: OxpToolSpec,
  authorization: "interrupt" | "message",
  deferred: boolean,
): OxpLangChainTool {
  const { definition } = spec;
  const metadata: OxpToolMetadata = {
    toolId: definition.id,
    version: definition.version,
    ...(definition.annotations === undefined ? {} : { annotations: definition.annotations }),
    needsApproval: spec.needsApproval,
  };
  return new DynamicStructuredTool({
    name: spec.name,
    description: spec.description,
    // Passed through as JSON Schema: LangChain 1.x hands it to the model as is and checks inputs against it.
    schema: spec.inputSchema,
    // LangChain's own check of the input otherwise says only "did not match expected schema", and the model cannot
    // tell what to correct.
    verboseParsingErrors: true,
    metadata: { oxp: metadata },
    tags: spec.needsApproval ? [OXP_TAG, NEEDS_APPROVAL_TAG] : [OXP_TAG],
    // Read by the `langchain` package's providerToolSearchMiddleware, which hands the tool to the provider deferred.
    ...(deferred ? { extras: { defer_loading: true } } : {}),
    func: async (input: unknown, _runManager: unknown, config?: ToolRunnableConfig) => {
      const toolCallId = config?.toolCall?.id;
      const interrupting = authorization === "interrupt" && canInterrupt(config);
      const reply = (text: string, status: "success" | "error", artifact: OxpToolArtifact) =>
        // Invoked with bare arguments rather than a tool call, a tool answers its content alone, as LangChain's do.
        // With one, a ToolMessage of our own, since LangChain's wrapping always says "success"; the model
        // (Anthropic's is_error, for one) and the agent's middleware should know the call did not give its result.
        toolCallId === undefined
          ? text
          : new ToolMessage({
              content: text,
              tool_call_id: toolCallId,
              name: spec.name,
              status,
              artifact,
              metadata: { oxp: metadata },
            });
      const request = (challenges: ToolAuthorizationChallenge[]): OxpAuthorizationRequest => ({
        kind: "oxp-authorization",
        toolName: spec.name,
        toolId: spec.definition.id,
        ...(toolCallId === undefined ? {} : { toolCallId }),
        challenges,
      });
      // Resumed, LangGraph runs this function again from the start. When the user's latest answer is "declined",
      // no call is made: it would start a new challenge on the server, or (a token granted meanwhile) run the tool
      // while the model reads that it did not. The answers are still taken in turn (each interrupt() gives back
      // one), as LangGraph expects of a resumed task; the request is not shown again, since an answer is waiting.
      if (interrupting && isDeclined(latestResumeValue(config))) {
        const { message } = untilDeclined((await langGraph()).interrupt, request([]));
        return reply(declinedText(spec.name, message), "error", { kind: "authorization-declined" });
      }
      const outcome = await spec.call(input, { signal: config?.signal });
      if (outcome.kind === "authorization" && interrupting) {
        // The call above is the one made after the user answered "authorized" (or the first), and a call that now
        // succeeds never gets here. Refused still, the answers so far are taken in turn, then interrupt() throws to
        // ask the user again: one OXP call per resume.
        const { message } = untilDeclined((await langGraph()).interrupt, request(outcome.challenges));
        return reply(declinedText(spec.name, message), "error", { kind: "authorization-declined" });
      }
      return reply(outcome.text, outcome.kind === "value" ? "success" : "error", artifactOf(outcome));
    },
  }) as OxpLangChainTool;
}

/**
 * Whether the tool runs inside a LangGraph graph that can stop and resume: LangGraph's `interrupt` needs both, and
 * throws without them, where the ToolMessage still serves.
 */
function canInterrupt(config: ToolRunnableConfig | undefined): boolean {
  const configurable = config?.configurable as Record<string, unknown> | undefined;
  return configurable?.__pregel_checkpointer !== undefined && configurable.__pregel_scratchpad !== undefined;
}

type LangGraph = typeof import("@langchain/langgraph");
let loading: Promise<LangGraph> | undefined;

/**
 * @langchain/langgraph, loaded when first needed: an optional peer, so that these tools load without it. A graph
 * running them has it installed.
 */
function langGraph(): Promise<LangGraph> {
  loading ??= import("@langchain/langgraph").catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

/**
 * The latest answer given to this task's interrupts, when LangGraph runs it again on a resume; undefined on a first
 * run. LangGraph offers no public way to read a resume value without taking it (`interrupt()` takes it, and throws
 * when there is none), so this reads the task's scratchpad as `interrupt()` does, under the same configurable key
 * {@link canInterrupt} checks: the answers given by interrupt id (`resume`, in order), then one given without an id
 * (`nullResume`), which `interrupt()` takes after them. The tests pin it at the version this package is tested with.
 */
function latestResumeValue(config: ToolRunnableConfig | undefined): unknown {
  const configurable = config?.configurable as Record<string, unknown> | undefined;
  const scratchpad = configurable?.__pregel_scratchpad as { resume?: unknown; nullResume?: unknown } | undefined;
  if (scratchpad?.nullResume !== undefined) {
    return scratchpad.nullResume;
  }
  return Array.isArray(scratchpad?.resume) ? scratchpad.resume.at(-1) : undefined;
}

/** Takes the answers given so far in turn until the user's "declined"; interrupt() throws to ask the user when none is left. */
function untilDeclined(
  interrupt: (value: OxpAuthorizationRequest) => unknown,
  request: OxpAuthorizationRequest,
): { type: "declined"; message?: string } {
  for (;;) {
    const answer = interrupt(request);
    if (isDeclined(answer)) {
      return answer;
    }
  }
}

function isDeclined(answer: unknown): answer is { type: "declined"; message?: string } {
  return typeof answer === "object" && answer !== null && (answer as { type?: unknown }).type === "declined";
}

/** What the model reads when the user declined to authorize the tool. */
function declinedText(name: string, message: unknown): string {
  return [
    `Error: the user did not authorize ${name}, so it did not run. Do not call it again unless the user asks.`,
    ...(typeof message === "string" && message !== "" ? [message] : []),
  ].join("\n\n");
}

function artifactOf(outcome: OxpToolOutcome): OxpToolArtifact {
  switch (outcome.kind) {
    case "value":
    case "tool-error":
      return { kind: outcome.kind, response: outcome.response } as OxpToolArtifact;
    case "invalid-input":
      return { kind: "invalid-input", parameterErrors: outcome.error.parameterErrors };
    case "authorization":
      return { kind: "authorization", challenges: outcome.challenges };
  }
}
