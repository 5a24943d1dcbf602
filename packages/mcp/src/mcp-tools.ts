/**
 * MCP to OXP: an MCP server's tools (reached with the v2 SDK's Client, @modelcontextprotocol/client) as
 * @otc/server tools, ready for createServer. One client for both generations of servers: it negotiates the
 * protocol revision, 2026-07-28 (stateless, per-request `_meta`) when the server speaks it, else the 2025
 * `initialize` handshake.
 */
import type { IOType } from "node:child_process";
import {
  type CallToolResult,
  Client,
  type Tool as McpTool,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { type InputValidatorChoice, OxpCore, type ToolkitDescriptions } from "@otc/server/core";
import { OxpToolError, type SchemaObject, ServerConfigError, type Tool } from "@otc/server/node";
import { formatToolId } from "@otc/types";
import { toOxpAnnotations } from "./internal/annotations.js";
import { byCodePoint, claimUnique, OXP_NAME, oxpToolName } from "./names.js";
import {
  DEFAULT_MAX_SCHEMA_CHARS,
  type JsonSchema,
  SchemaConversionError,
  SchemaTooLargeError,
  toOxpInputSchema,
  toOxpOutputSchema,
} from "./schemas.js";

/** An MCP server started as a child process, spoken to over stdio. */
export interface McpStdioSource {
  command: string;
  args?: string[];
  /** Added to the SDK's safe default environment (PATH, HOME...); the parent's other variables are not passed. */
  env?: Record<string, string>;
  cwd?: string;
  /** The child's stderr. Default `inherit`. */
  stderr?: IOType;
}

/** An MCP server reached over streamable HTTP. */
export interface McpHttpSource {
  url: string;
  /** Extra headers on every request, e.g. `Authorization`. */
  headers?: Record<string, string>;
}

/** Where the MCP server is. */
export type McpSource = McpStdioSource | McpHttpSource;

/** Options of {@link mcpTools}. */
export interface McpToolsOptions {
  /** The OXP toolkit the tools go in: letters, digits and `_`. */
  toolkit: string;
  /** The OXP version every tool gets, `x.y.z`. */
  version: string;
  /** Each tool's OXP time limit (`timeoutMs`) for calls answered in their own request, in ms; it aborts the MCP call. Default: the server's. */
  timeoutMs?: number;
  /** Time limit of one asynchronous OXP call (the tasks extension), in ms, as each tool's `asyncTimeoutMs`. Default: the server's. */
  asyncTimeoutMs?: number;
  /**
   * How the protocol revision is chosen (the SDK's `versionNegotiation.mode`). `auto` (default): a
   * `server/discover` probe first, then 2026-07-28 where the server offers it, else the 2025 `initialize`
   * handshake. `legacy`: the handshake only, for a known 2025 server: a stdio server is then started once, not
   * twice, and one that ignores the probe does not hold the start back (see README, Known limits).
   */
  versionNegotiation?: "auto" | "legacy";
  /**
   * Under `auto`, how long a stdio server has to answer the SDK's `server/discover` probe, in ms, before it is
   * taken for a 2025 server (some never answer a request before `initialize`). Default 10,000. A server slow to
   * start (a runtime that compiles at start-up, a busy machine) may need longer: a 2026-07-28 server that answers
   * after it would be spoken to in 2025, or refused. Over HTTP the SDK's own time limit (60 s) applies.
   */
  stdioProbeTimeoutMs?: number;
  /**
   * The most characters of JSON one tool's input or output schema may take once its `$ref`s are inlined: a
   * hostile chain of references, each naming the next twice, would otherwise make gigabytes of a kilobyte.
   * Inlining stops there; a tool whose input schema passes it is skipped (an output schema that passes it
   * becomes `{}`). Default 262,144 (256 KiB), several times the largest schemas real servers publish.
   */
  maxSchemaChars?: number;
  /**
   * The most characters of JSON inlining may build for all the tools together, what it built for tools then
   * skipped included; the tools (in code-point order of their names) past it are skipped. It bounds the start's
   * time and memory whatever the number of tools: the OXP server compiles every schema, at about 10 ms per KB.
   * Default 4,194,304 (4 MiB).
   */
  maxTotalSchemaChars?: number;
  /**
   * The `inputValidator` of the OXP server the tools go in (see `createServer`): a tool it would refuse
   * (a `format` it does not know, say) is skipped rather than failing the whole server's start. Default: the
   * runtime's default validator, as for `createServer`.
   */
  inputValidator?: InputValidatorChoice;
}

/** An MCP tool left out, and why. */
export interface SkippedTool {
  name: string;
  reason: string;
}

/** MCP tools as OXP tools, and the connection they call through. */
export interface McpTools {
  /** For `createServer({ tools })`. */
  tools: Tool[];
  /** The MCP name behind each OXP tool id (`Everything.GetSum@1.0.0` is `get-sum`). */
  names: ReadonlyMap<string, string>;
  /**
   * For `createServer({ toolkits })`: the toolkit described by the MCP server's own description (`serverInfo.description`,
   * MCP 2025-11-25 and later; cut to the 1,000 characters OXP takes), as the search extension's `GET /toolkits` lists
   * it. Empty when the server gives none, or no tool is served.
   */
  toolkits: ToolkitDescriptions;
  /**
   * MCP tools left out, in code-point order of their names: schemas OXP cannot express (recursive or remote
   * `$ref`, an input that is not an object), schemas too large ({@link McpToolsOptions.maxSchemaChars}), task-only
   * tools, and tools the OXP server would refuse (an id longer than OXP allows, say), by its own checks.
   */
  skipped: SkippedTool[];
  /**
   * The SDK client (@modelcontextprotocol/client), connected; `client.getProtocolEra()` says which generation
   * the server speaks (`modern`: 2026-07-28, `legacy`: a 2025 revision).
   */
  client: Client;
  /**
   * Resolves when the MCP connection ends: `close()`, or a stdio server's process exiting. It is
   * never re-opened: from then on every call is a tool error with `can_retry: true`, until whoever
   * owns the OXP server calls `mcpTools` again (e.g. restarts the process).
   */
  closed: Promise<void>;
  /** Closes the MCP connection (and ends a stdio server's process). */
  close(): Promise<void>;
}

const VERSION = /^\d+\.\d+\.\d+$/;
/**
 * The SDK's time limit of a call when no longer one is given: a day, past any OXP server's limit (15
 * minutes by default for an asynchronous call), since the OXP server always applies its own and that
 * is the one meant to end a call.
 */
const SDK_FALLBACK_TIMEOUT_MS = 24 * 60 * 60_000;
/** The longest delay a Node.js timer takes; the SDK's time limit is one. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * How long a stdio server has to answer the SDK's `server/discover` probe, unless `stdioProbeTimeoutMs` says
 * otherwise. Silence there means a 2025 server (some never answer a request before `initialize`), so it only
 * delays the start, never fails it; over HTTP silence is an outage and the SDK's own limit applies.
 */
const STDIO_PROBE_TIMEOUT_MS = 10_000;
/** The default of `maxTotalSchemaChars`: 4 MiB, sixteen schemas at the default bound of one. */
const MAX_TOTAL_SCHEMA_CHARS = 4 * 1024 * 1024;

/** A positive whole number given for the option `name`, or its default; a RangeError otherwise. */
function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const chosen = value ?? fallback;
  if (!(Number.isInteger(chosen) && chosen > 0)) {
    throw new RangeError(`${name} must be a positive whole number`);
  }
  return chosen;
}

/** Why an OXP server given these tools (and the same `inputValidator`) would refuse to start, if it would. */
function refusal(tools: readonly Tool[], inputValidator: InputValidatorChoice | undefined): string | undefined {
  try {
    // The server's own checks (createServer builds one of these): the rules stay where they are made.
    new OxpCore({ tools, ...(inputValidator === undefined ? {} : { inputValidator }) });
    return undefined;
  } catch (error) {
    if (error instanceof ServerConfigError) {
      return error.message;
    }
    throw error;
  }
}

/**
 * The tools an OXP server would refuse, each with the server's reason. All at once first (one validator, one
 * pass: the usual case); past a refusal, from the tool after the one refused, which the message names (the
 * server checks tools in order), or one by one should no tool's id start the message.
 */
function refusals(tools: readonly Tool[], inputValidator: InputValidatorChoice | undefined): Map<Tool, string> {
  const refused = new Map<Tool, string>();
  let rest = tools;
  for (let problem = refusal(rest, inputValidator); problem !== undefined; problem = refusal(rest, inputValidator)) {
    const reason = problem;
    const index = rest.findIndex((tool) =>
      reason.startsWith(`Tool '${formatToolId({ toolkit: tool.toolkit, tool: tool.name, version: tool.version })}'`),
    );
    if (index === -1) {
      for (const tool of rest) {
        const alone = refusal([tool], inputValidator);
        if (alone !== undefined) {
          refused.set(tool, alone);
        }
      }
      break;
    }
    refused.set(rest[index] as Tool, reason);
    rest = rest.slice(index + 1);
  }
  return refused;
}

function transportFor(source: McpSource): StreamableHTTPClientTransport | StdioClientTransport {
  if ("url" in source) {
    return new StreamableHTTPClientTransport(
      new URL(source.url),
      source.headers ? { requestInit: { headers: source.headers } } : undefined,
    );
  }
  return new StdioClientTransport({
    command: source.command,
    ...(source.args ? { args: source.args } : {}),
    ...(source.env ? { env: source.env } : {}),
    ...(source.cwd ? { cwd: source.cwd } : {}),
    stderr: source.stderr ?? "inherit",
  });
}

/** The text of a result's text blocks, one per line. */
const textOf = (result: CallToolResult) =>
  result.content
    .filter((block): block is { type: "text"; text: string } => block.type === "text")
    .map((block) => block.text)
    .join("\n");

/**
 * The OXP value of an MCP result: `structuredContent` when the tool sent it; else, when every content
 * block is text, the text as one string (one block per line), never parsed, so a tool's value has
 * the same type whatever its text looks like; else the content blocks themselves (images, resources).
 */
export function toOxpValue(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) {
    return result.structuredContent;
  }
  return result.content.every((block) => block.type === "text") ? textOf(result) : result.content;
}

/**
 * Connects to an MCP server and returns its tools as OXP tools: ids `Toolkit.Tool@version` (the tool
 * part the MCP name in PascalCase, made unique), input schemas made self-contained with a
 * description on every top-level property, output schemas from `outputSchema` or `{}`, annotations from
 * MCP's title and hints. A call is a tools/call through the SDK client with a progress token: the MCP
 * server's progress notifications are the OXP call's progress (`context.progress`), and the tool's
 * signal (an OXP cancel, a time limit, shutdown) cancels the MCP request (`notifications/cancelled`). An
 * `isError` result is an OxpToolError with the result's text.
 *
 * @example
 * const everything = await mcpTools({ command: "npx", args: ["@modelcontextprotocol/server-everything"] },
 *   { toolkit: "Everything", version: "1.0.0" });
 * await listen(createServer({ tools: everything.tools }), { port: 8080 });
 */
export async function mcpTools(source: McpSource, options: McpToolsOptions): Promise<McpTools> {
  if (!OXP_NAME.test(options.toolkit)) {
    throw new RangeError("toolkit must be letters, digits and '_'");
  }
  if (!VERSION.test(options.version)) {
    throw new RangeError("version must be x.y.z, e.g. 1.0.0");
  }
  const probeTimeoutMs = options.stdioProbeTimeoutMs ?? STDIO_PROBE_TIMEOUT_MS;
  if (!(Number.isFinite(probeTimeoutMs) && probeTimeoutMs > 0)) {
    throw new RangeError("stdioProbeTimeoutMs must be a positive number of ms");
  }
  for (const name of ["timeoutMs", "asyncTimeoutMs"] as const) {
    const ms = options[name];
    if (ms !== undefined && !(Number.isFinite(ms) && ms > 0)) {
      throw new RangeError(`${name} must be a positive number of ms`);
    }
  }
  const maxSchemaChars = positiveInteger("maxSchemaChars", options.maxSchemaChars, DEFAULT_MAX_SCHEMA_CHARS);
  const maxTotalSchemaChars = positiveInteger(
    "maxTotalSchemaChars",
    options.maxTotalSchemaChars,
    MAX_TOTAL_SCHEMA_CHARS,
  );
  // An inputValidator the server does not know is the caller's mistake, not every tool's: said before connecting.
  const unusable = options.inputValidator === undefined ? undefined : refusal([], options.inputValidator);
  if (unusable !== undefined) {
    throw new RangeError(unusable);
  }
  const mode = options.versionNegotiation ?? "auto";
  // `auto`: a 2026-07-28 server is spoken to in its revision, any other in the 2025 handshake. On stdio the SDK
  // sends its probe to a short-lived second process started the same way (its stderr discarded).
  const client = new Client(
    { name: "otc-mcp-tools", version: "0.1.0" },
    {
      versionNegotiation: {
        mode,
        ...("url" in source ? {} : { probe: { timeoutMs: probeTimeoutMs } }),
      },
    },
  );
  let isClosed = false;
  const closed = new Promise<void>((resolve) => {
    client.onclose = () => {
      isClosed = true;
      resolve();
    };
  });
  const transport = transportFor(source);
  // Whether a stdio server's process was started (not only its probe's): only then is there one to wait for
  // after a failed start. Set on the instance, since the SDK probes on a sibling only for the class itself.
  let started = false;
  if (transport instanceof StdioClientTransport) {
    const start = transport.start.bind(transport);
    transport.start = () => {
      started = true;
      return start();
    };
  }
  let listed: McpTool[];
  try {
    await client.connect(transport);
    // Without a cursor the SDK walks every page (at most 64: a server whose cursors never end is an error, not
    // an endless start) and keeps the list, which callTool checks structuredContent against.
    listed = (await client.listTools()).tools;
  } catch (error) {
    await closeAfterFailure(client, transport, started ? closed : undefined);
    throw error;
  }
  // The SDK's own time limit is set past the OXP server's, so a slow tool ends as the server's timeout
  // (it aborts the tool's signal, and the MCP request with it), not as the SDK's error.
  const sdkTimeoutMs = Math.min(
    MAX_TIMER_MS,
    Math.max(SDK_FALLBACK_TIMEOUT_MS, options.timeoutMs ?? 0, options.asyncTimeoutMs ?? 0) + 1_000,
  );
  const where = "url" in source ? "MCP server" : `MCP server process (${source.command})`;
  // Said to the model and the user; the developer message says why, for whoever restarts the server.
  const disconnected = (cause?: unknown) =>
    new OxpToolError("The MCP server behind this tool is not running; try again once it has been restarted.", {
      canRetry: true,
      developerMessage: `the connection to the ${where} has ended; @otc/mcp does not reconnect (see McpTools.closed)`,
      ...(cause === undefined ? {} : { cause }),
    });

  const taken = new Set<string>();
  const candidates: { tool: Tool; mcpName: string }[] = [];
  const skipped: SkippedTool[] = [];
  // What inlining built for all the tools so far, refused ones included: it bounds the start, whatever the server sends.
  const meter = { chars: 0 };
  const totalTooLarge = `its schemas are too large: all the tools' schemas together would pass ${maxTotalSchemaChars} characters of JSON (maxTotalSchemaChars)`;
  // Sorted, so the names a collision gets do not depend on the order the server lists its tools in.
  for (const mcp of [...listed].sort((a, b) => byCodePoint(a.name, b.name))) {
    // Task-only tools need the SDK's experimental task API, which a plain call cannot drive.
    if (mcp.execution?.taskSupport === "required") {
      skipped.push({ name: mcp.name, reason: "it can only run as an MCP task" });
      continue;
    }
    const left = maxTotalSchemaChars - meter.chars;
    if (left <= 0) {
      skipped.push({ name: mcp.name, reason: totalTooLarge });
      continue;
    }
    let inputSchema: JsonSchema;
    try {
      inputSchema = toOxpInputSchema(mcp.inputSchema, { maxChars: Math.min(maxSchemaChars, left), meter });
    } catch (error) {
      if (!(error instanceof SchemaConversionError)) {
        throw error;
      }
      // Past what was left of the total, when that was the tighter bound: the total's reason.
      const pastTotal = error instanceof SchemaTooLargeError && error.maxChars < maxSchemaChars;
      skipped.push({
        name: mcp.name,
        reason: pastTotal ? totalTooLarge : `its input schema cannot be served over OXP: ${error.message}`,
      });
      continue;
    }
    const outputLeft = maxTotalSchemaChars - meter.chars;
    // Past the bounds (or recursive, or remote), the output is `{}`: its value is not described.
    const outputSchema =
      outputLeft > 0
        ? toOxpOutputSchema(mcp.outputSchema, { maxChars: Math.min(maxSchemaChars, outputLeft), meter })
        : {};
    const name = claimUnique(oxpToolName(mcp.name), taken);
    const description = mcp.description?.trim() || mcp.title || `The MCP tool ${mcp.name}.`;
    // A Tool written out rather than through defineTool: the schemas are data read at run time, so
    // defineTool's typing of input and value from them has nothing to infer.
    const tool: Tool = {
      toolkit: options.toolkit,
      name,
      version: options.version,
      description,
      inputSchema: inputSchema as SchemaObject,
      outputSchema: outputSchema as SchemaObject,
      annotations: toOxpAnnotations(mcp),
      requirements: undefined,
      timeoutMs: options.timeoutMs,
      asyncTimeoutMs: options.asyncTimeoutMs,
      run: async (input, ctx) => {
        if (isClosed) {
          throw disconnected();
        }
        let result: CallToolResult;
        try {
          result = await client.callTool(
            { name: mcp.name, arguments: input as Record<string, unknown> },
            {
              // Cancelling is `notifications/cancelled` (stdio, 2025 HTTP) or, on 2026-07-28 HTTP, closing the call's stream.
              signal: ctx.signal,
              timeout: sdkTimeoutMs,
              // With onprogress the SDK sends a progressToken; the OXP server keeps what increases, a few a second.
              onprogress: ({ progress, total, message }) => {
                ctx.progress({
                  progress,
                  ...(total === undefined ? {} : { total }),
                  ...(message === undefined ? {} : { message }),
                });
              },
            },
          );
        } catch (error) {
          if (ctx.signal.aborted) {
            throw error;
          }
          if (isClosed || (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed)) {
            throw disconnected(error);
          }
          if (!(error instanceof ProtocolError)) {
            throw error;
          }
          // The MCP server refused the call (a protocol error): the model gets its message.
          throw new OxpToolError(error.message, { developerMessage: `MCP error ${error.code} from ${mcp.name}` });
        }
        if (result.isError) {
          throw new OxpToolError(textOf(result) || `The MCP tool ${mcp.name} failed`);
        }
        return toOxpValue(result);
      },
    };
    candidates.push({ tool, mcpName: mcp.name });
  }
  // A tool the OXP server would refuse (an id past OXP's length, say) would stop it from serving any: it is left out.
  const refused = refusals(
    candidates.map(({ tool }) => tool),
    options.inputValidator,
  );
  const tools: Tool[] = [];
  const names = new Map<string, string>();
  for (const { tool, mcpName } of candidates) {
    const reason = refused.get(tool);
    if (reason !== undefined) {
      skipped.push({ name: mcpName, reason: `the OXP server would refuse it: ${reason}` });
      continue;
    }
    tools.push(tool);
    names.set(`${options.toolkit}.${tool.name}@${options.version}`, mcpName);
  }
  skipped.sort((a, b) => byCodePoint(a.name, b.name));
  const described = toolkitDescription(client.getServerVersion()?.description);
  // A description of a toolkit without tools is one createServer refuses.
  const toolkits: ToolkitDescriptions =
    described === undefined || tools.length === 0 ? {} : { [options.toolkit]: { description: described } };
  return { tools, names, toolkits, skipped, client, closed, close: () => client.close() };
}

/** The longest toolkit description OXP takes (`[search.toolkits]`, the server's `toolkits` option). */
const MAX_TOOLKIT_DESCRIPTION = 1_000;

/**
 * An MCP server's description as its toolkit's: trimmed, cut to what OXP takes (ending in an ellipsis); none when
 * blank. OXP counts UTF-16 code units, as JavaScript strings do; a cut never splits a surrogate pair.
 */
function toolkitDescription(description: unknown): string | undefined {
  const trimmed = typeof description === "string" ? description.trim() : "";
  if (trimmed === "") {
    return undefined;
  }
  if (trimmed.length <= MAX_TOOLKIT_DESCRIPTION) {
    return trimmed;
  }
  const cut = trimmed.slice(0, MAX_TOOLKIT_DESCRIPTION - 1);
  return `${/[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}

/** How long a failed start waits for the MCP server's process to end: the SDK's close takes up to 4 s (stdin's end, SIGTERM, SIGKILL). */
const CLOSE_WAIT_MS = 5_000;

/**
 * Closes a client whose start failed and, given `closed`, waits for its stdio server's process to end, so that
 * no child is left running after mcpTools rejects. The SDK starts closing on a failed `initialize` without
 * waiting; closing again is harmless, and `closed` tells when it is done. A connection that failed before the
 * client took the transport (the probe's) is closed here too, and has no process to wait for.
 */
async function closeAfterFailure(client: Client, transport: Transport, closed?: Promise<void>): Promise<void> {
  await client.close().catch(() => undefined);
  await transport.close().catch(() => undefined);
  if (closed === undefined) {
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS).unref()))]);
  clearTimeout(timer);
}
