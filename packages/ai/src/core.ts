/** @otc/ai's framework-neutral half: which of a server's tools, under which names, and what a call's outcome tells the model. */
import {
  MAX_WAIT_SECONDS,
  type OxpClient,
  type OxpFailedOutcome,
  type OxpServerError,
  type OxpValidationError,
  toModelText,
} from "@otc/client";
import {
  type CallToolRequest,
  type CallToolSuccess,
  parseToolId,
  resolveToolVersion,
  type ToolAuthorizationChallenge,
  type ToolDefinition,
  type ToolVersionRequest,
  validateServerErrorResponse,
  validateValidationErrorResponse,
} from "@otc/types";

/** What every call carries in its `context`: authorization tokens, secrets, a user id. */
export type OxpCallContext = NonNullable<CallToolRequest["context"]>;

/** Which tools ask the user before they run, where the framework has a way to ask. */
export type OxpApproval = "destructive" | "always" | "never" | ((tool: ToolDefinition) => boolean);

/**
 * How the tools reach the model (docs/protocol.md 9.5): `eager`, every definition up front; `provider`, every
 * definition marked deferred for the framework's (or its provider's) own tool search; `server`, one `search_tools`
 * tool backed by the server's search, whose matches become callable on the model's next step.
 */
export type OxpToolLoading = "eager" | "provider" | "server";

/** The ways of {@link OxpToolLoading}, to check an option against. */
const LOADINGS: readonly OxpToolLoading[] = ["eager", "provider", "server"];

/** Options of every framework's `oxpTools`. */
export interface OxpToolsOptions {
  /**
   * Only these tools, by id, versions resolved as the protocol resolves them (docs/protocol.md 3.4): `Toolkit.Tool`
   * takes its latest version, `Toolkit.Tool@1.2.0` pins that one, and `Toolkit.Tool@1` exactly 1.0.0. With
   * `toolkits` too, a tool named by either is taken. An id the server does not list is an error.
   */
  tools?: readonly string[];
  /**
   * Only the tools of these toolkits (each in its latest version, unless `tools` pins one). A toolkit the server
   * does not list is an error.
   */
  toolkits?: readonly string[];
  /**
   * Sent as `context.user_id` on every call: tools that act for a user need it, and a server holding connections
   * finds the user's by it.
   */
  userId?: string;
  /**
   * The rest of every call's `context`: secrets the tools require, and authorization tokens where the application
   * holds them. A server that holds its users' connections (docs/protocol.md 9.7) needs no token here: it puts the
   * user's token into each call itself, and a user not yet connected gets an authorization challenge (the provider's
   * link), which each framework's adapter stops the run at as for any challenge.
   */
  context?: Omit<OxpCallContext, "user_id">;
  /**
   * Which tools ask the user before they run, where the framework can ask (its own approval): `"destructive"`
   * (the default) those the server's annotations do not call safe (`read_only: true` or `destructive: false`;
   * absent hints mean destructive, as the protocol says), or all, none, or those a function picks.
   */
  approval?: OxpApproval;
  /** Aborts the listing. */
  signal?: AbortSignal;
  /**
   * How the tools reach the model. `"eager"` (the default): every selected tool's definition, up front. `"provider"`:
   * every selected tool marked deferred, for the framework's own tool search to load when the model looks for it (the
   * application adds that search: see each adapter). `"server"`: a single `search_tools` tool, backed by the server's
   * ranked search (`GET /tools?q=`, the search extension), which loads the definitions it finds (`GET /tools?ids=`) so
   * that the model can call them on its next step; `tools` and `toolkits` then narrow what it can find. `"server"`
   * needs a server that offers the search extension, and fails at once otherwise.
   */
  loading?: OxpToolLoading;
  /** With `loading: "server"`: how many of a search's best matches it lists and loads, a whole number from 1 to 50. Default 5. */
  searchLimit?: number;
}

/** The `loading` option, checked: one of {@link OxpToolLoading} (default `eager`), or a RangeError. */
export function loadingOf(options: Pick<OxpToolsOptions, "loading">): OxpToolLoading {
  const loading = options.loading ?? "eager";
  if (!LOADINGS.includes(loading)) {
    throw new RangeError(
      `loading is one of ${LOADINGS.map((one) => `"${one}"`).join(", ")} (got ${JSON.stringify(loading)})`,
    );
  }
  return loading;
}

/**
 * How a call ended, as the model is to hear of it: a value, or one of @otc/client's failed outcomes (the tool's error
 * with its additional_prompt_content and retry advice, a 422's problems by property, an authorization to ask for).
 * Errors the model cannot act on (the server unreachable, a 401) throw.
 */
export type OxpToolOutcome =
  | { kind: "value"; text: string; value: unknown; response: CallToolSuccess }
  | OxpFailedOutcome;

/** Options of one call. */
export interface OxpToolCallOptions {
  signal?: AbortSignal;
  /** The call's call_id; the same id makes a retried call run once. Default: a new one. */
  callId?: string;
}

/** One of a server's tools, ready to be wrapped as a framework's tool. */
export interface OxpToolSpec {
  /** The tool as the server lists it (with its annotations where the server offers them). */
  definition: ToolDefinition;
  /** The name the model calls it by: the tool's `name`, with its version when two versions are taken. */
  name: string;
  /** What the model reads; a deprecated tool's deprecation message follows its description. */
  description: string;
  /** The input's JSON Schema, an object schema at the top as every framework requires. */
  inputSchema: Record<string, unknown>;
  /** Whether the user approves each call first (see {@link OxpToolsOptions.approval}). */
  needsApproval: boolean;
  /** Calls the tool through the client (with its retries). */
  call(input: unknown, options?: OxpToolCallOptions): Promise<OxpToolOutcome>;
}

/** A model-facing name: letters, digits, `_` and `-`, at most 64 characters. */
const MODEL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Lists the server's tools (with their annotations where it offers them), keeps those the options select, and
 * makes each a {@link OxpToolSpec}. Throws for a selected id or toolkit the server does not list, and when two tools would
 * take the same model name.
 */
export async function oxpToolSpecs(client: OxpClient, options: OxpToolsOptions = {}): Promise<OxpToolSpec[]> {
  const listed = await client.listTools({ annotations: true, signal: options.signal });
  const chosen = selectTools(listed, options);
  const names = modelNames(chosen);
  const made = { client, approval: options.approval ?? "destructive", context: callContext(options) } as const;
  return chosen.map((definition, index) => toolSpec(definition, { ...made, name: names[index] as string }));
}

/** What {@link toolSpec} needs besides the definition: the client, the model name, the approval rule and the context. */
export interface ToolSpecParts {
  client: OxpClient;
  name: string;
  approval: OxpApproval;
  context: OxpCallContext | undefined;
}

/** One definition as an {@link OxpToolSpec}, under the model name given. */
export function toolSpec(definition: ToolDefinition, { client, name, approval, context }: ToolSpecParts): OxpToolSpec {
  return {
    definition,
    name,
    description:
      definition.deprecation_message === undefined
        ? definition.description
        : `${definition.description}\n\nDeprecated: ${definition.deprecation_message}`,
    inputSchema: objectSchema(definition.input_schema as Record<string, unknown>),
    needsApproval: needsApproval(approval, definition),
    call: (input, callOptions = {}) => callTool({ client, definition, context }, input, callOptions),
  };
}

/** Every call's `context`: the options' `context` with `userId` as `user_id`; undefined when neither is given. */
export function callContext(options: Pick<OxpToolsOptions, "userId" | "context">): OxpCallContext | undefined {
  return options.userId === undefined && options.context === undefined
    ? undefined
    : { ...options.context, ...(options.userId === undefined ? {} : { user_id: options.userId }) };
}

/** Whether `name` can be a model-facing tool name: letters, digits, `_` and `-`, at most 64 characters. */
export function isModelName(name: string): boolean {
  return MODEL_NAME.test(name);
}

/** The tools the options select, each once: the latest version of each name, unless a selector pins one. */
export function selectTools(
  listed: readonly ToolDefinition[],
  options: Pick<OxpToolsOptions, "tools" | "toolkits">,
): ToolDefinition[] {
  const byName = new Map<string, ToolDefinition[]>();
  for (const tool of listed) {
    const parsed = parseToolId(tool.id);
    const key = parsed ? `${parsed.toolkit}.${parsed.tool}` : tool.id;
    byName.set(key, [...(byName.get(key) ?? []), tool]);
  }
  // @otc/types owns version resolution (the server resolves a call's tool_id with it too): `@1` is exactly 1.0.0.
  const resolve = (versions: readonly ToolDefinition[], request: ToolVersionRequest) => {
    const version = resolveToolVersion(
      versions.map((tool) => tool.version),
      request,
    );
    return versions.find((tool) => tool.version === version);
  };
  const latest = (versions: readonly ToolDefinition[]) => resolve(versions, { kind: "latest" }) as ToolDefinition;

  if (options.tools === undefined && options.toolkits === undefined) {
    return [...byName.values()].map(latest);
  }
  const chosen = new Set<ToolDefinition>();
  const unknown: string[] = [];
  for (const selector of options.tools ?? []) {
    const parsed = parseToolId(selector);
    const versions = parsed ? byName.get(parsed.qualifiedName) : undefined;
    const tool = parsed && versions ? resolve(versions, parsed) : undefined;
    if (tool) {
      chosen.add(tool);
    } else {
      unknown.push(selector);
    }
  }
  const toolkits = new Set(options.toolkits ?? []);
  const found = new Set<string>();
  for (const [key, versions] of byName) {
    const toolkit = key.slice(0, key.indexOf("."));
    if (!toolkits.has(toolkit)) {
      continue;
    }
    found.add(toolkit);
    if (!versions.some((tool) => chosen.has(tool))) {
      chosen.add(latest(versions));
    }
  }
  // A misspelt toolkit would otherwise leave the agent without its tools and nobody told.
  const unknownToolkits = [...toolkits].filter((toolkit) => !found.has(toolkit));
  if (unknown.length > 0 || unknownToolkits.length > 0) {
    const named = (kind: string, names: readonly string[]) =>
      names.length === 0 ? [] : [`no ${kind} ${names.map((name) => JSON.stringify(name)).join(", ")}`];
    throw new Error(
      `The server lists ${[...named("tool", unknown), ...named("toolkit", unknownToolkits)].join(" and ")}`,
    );
  }
  return listed.filter((tool) => chosen.has(tool));
}

/** Each tool's model name: its `name`, with `_<version>` where two versions of one name are taken. */
function modelNames(tools: readonly ToolDefinition[]): string[] {
  const count = new Map<string, number>();
  for (const tool of tools) {
    count.set(tool.name, (count.get(tool.name) ?? 0) + 1);
  }
  const names = tools.map((tool) =>
    (count.get(tool.name) ?? 0) > 1
      ? `${tool.name}_${tool.version.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, 64)
      : tool.name,
  );
  const seen = new Set<string>();
  for (const [index, name] of names.entries()) {
    if (!MODEL_NAME.test(name) || seen.has(name)) {
      throw new Error(
        `Two of the tools selected, or ${(tools[index] as ToolDefinition).id}, cannot take the model name ${JSON.stringify(name)}`,
      );
    }
    seen.add(name);
  }
  return names;
}

/** An input schema with `type: "object"` at the top, as the frameworks require. */
function objectSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return schema.type === undefined ? { type: "object", properties: {}, ...schema } : schema;
}

function needsApproval(approval: OxpApproval, tool: ToolDefinition): boolean {
  if (typeof approval === "function") {
    return approval(tool);
  }
  return approval === "always" || (approval === "destructive" && mayDestroy(tool));
}

/**
 * Whether a tool may be destructive by the server's hints, an absent hint taking the protocol's default
 * (docs/protocol.md 9.2, MCP's too): not read-only, destructive. A tool says it is safe with `read_only: true` or
 * `destructive: false`; one that says nothing (or a server without the annotations extension) asks.
 */
function mayDestroy(tool: ToolDefinition): boolean {
  return tool.annotations?.read_only !== true && tool.annotations?.destructive !== false;
}

async function callTool(
  {
    client,
    definition,
    context,
  }: { client: OxpClient; definition: ToolDefinition; context: OxpCallContext | undefined },
  input: unknown,
  options: OxpToolCallOptions,
): Promise<OxpToolOutcome> {
  const request: CallToolRequest = {
    tool_id: definition.id,
    input: (input ?? {}) as Record<string, unknown>,
    ...(context === undefined ? {} : { context }),
    ...(options.callId === undefined ? {} : { call_id: options.callId }),
  };
  try {
    // Asked as a task (docs/protocol.md 9.3), as the MCP bridge asks: the server holds its answer up to 30 s, so a
    // quick call is still one request, and a longer one has the asynchronous time limit. When the agent's run is
    // aborted (the user pressed stop), the call is cancelled on the server (DELETE): an abandoned synchronous call
    // with a call_id would run on there. A server without the tasks extension is called as by `callTool`.
    const call = await client.callToolAsync(request, {
      signal: options.signal,
      cancelOnAbort: true,
      waitSeconds: ANSWER_WAIT_SECONDS,
    });
    const response = await call.result();
    return response.success
      ? { kind: "value", text: toModelText(response), value: response.value, response }
      : { kind: "tool-error", text: toModelText(response), response };
  } catch (error) {
    if (isValidationError(error)) {
      return { kind: "invalid-input", text: invalidInputText(definition, error), error };
    }
    if (isServerError(error)) {
      const challenges = error.body.missing_requirements?.authorization ?? [];
      if (challenges.length > 0) {
        return { kind: "authorization", text: authorizationText(definition, challenges), challenges, error };
      }
    }
    throw error;
  }
}

/** How long the server may hold its answer to a call (`Prefer: wait=N`, the most the protocol allows). */
const ANSWER_WAIT_SECONDS = MAX_WAIT_SECONDS;

/*
 * The client's errors are recognised by what they carry, not by their class: `instanceof` knows only this package's
 * copy of @otc/client, and an application whose client is another version has another copy (@otc/client is a peer,
 * but npm may still nest one when a user overrides it). Every copy's response errors carry `status` and `body` as the
 * server sent them; the body is checked here against the spec's schema for that status, as the client checked it.
 */

/** A 422 answered with a ValidationErrorResponse: an OxpValidationError of any copy of @otc/client. */
function isValidationError(error: unknown): error is OxpValidationError {
  const answer = responseOf(error);
  return (
    answer?.status === 422 &&
    validateValidationErrorResponse(answer.body) &&
    typeof (error as { parameterErrors?: unknown }).parameterErrors === "object"
  );
}

/** An error status but 401 and 422 answered with a ServerErrorResponse: an OxpServerError of any copy. */
function isServerError(error: unknown): error is OxpServerError {
  const answer = responseOf(error);
  return (
    answer !== undefined && answer.status !== 401 && answer.status !== 422 && validateServerErrorResponse(answer.body)
  );
}

/** The status and body an error of @otc/client's response family carries, or undefined for any other thrown thing. */
function responseOf(error: unknown): { status: number; body: unknown } | undefined {
  if (!(error instanceof Error)) {
    return undefined;
  }
  const { status, body } = error as { status?: unknown; body?: unknown };
  return typeof status === "number" && typeof body === "object" && body !== null ? { status, body } : undefined;
}

/** What the model reads after a 422: which properties are wrong and why, so that it can call again. */
export function invalidInputText(tool: ToolDefinition, error: OxpValidationError): string {
  const problems = Object.entries(error.parameterErrors).map(
    ([path, problem]) => `- ${path || "(the input)"}: ${problem}`,
  );
  return [
    `Error: the input for ${tool.name} does not match its schema${problems.length > 0 ? ":" : "."}`,
    ...problems,
    "Correct the input and call the tool again.",
  ].join("\n");
}

/** What the model (and through it the user) reads when the user must authorize first: where, and what next. */
export function authorizationText(tool: ToolDefinition, challenges: readonly ToolAuthorizationChallenge[]): string {
  const urls = challenges.map((challenge) => challenge.url);
  return [
    `${tool.name} needs the user's authorization before it can run.`,
    `Ask the user to open ${urls.length === 1 ? "this link" : "these links"} and grant access:`,
    ...urls.map((url) => `- ${url}`),
    "Once the user has done so, call the tool again.",
  ].join("\n");
}
