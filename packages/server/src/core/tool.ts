/** Authoring tools: `defineTool`, the context a tool runs with, and the error a tool throws to fail on purpose. */
import type { CallProgress, ToolAnnotations, ToolError, ToolRequirements } from "@otc/types";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { FromSchema, JSONSchema } from "json-schema-to-ts";
import { ServerConfigError } from "./errors.js";
import { isStandardSchema, standardInputJsonSchema } from "./standard-schema.js";

/** The logger a tool gets: structured, one object of fields plus a message. */
export interface ToolLogger {
  debug(fields: Record<string, unknown>, message?: string): void;
  info(fields: Record<string, unknown>, message?: string): void;
  warn(fields: Record<string, unknown>, message?: string): void;
  error(fields: Record<string, unknown>, message?: string): void;
}

/** What a running tool knows about its call. */
export interface ToolContext {
  /** The call's id (the client's, or one the server made). */
  callId: string;
  /** The client's trace id, or the trace id of a W3C `traceparent` header. */
  traceId: string | undefined;
  /** The end user, from `context.user_id`. */
  userId: string | undefined;
  /** Tokens by authorization provider id, from the request or held by the server. */
  tokens: Readonly<Record<string, string>>;
  /** Secret values by id, from the request or the server's configuration. */
  secrets: Readonly<Record<string, string>>;
  /** The request's other `context` keys, as sent. */
  extra: Readonly<Record<string, unknown>>;
  /**
   * Aborted when the call runs past its time limit or the server gives up on it. Like `logger`, made on first
   * read by a getter of the context's class: read it from the context, as a spread copy (`{ ...context }`) has neither.
   */
  signal: AbortSignal;
  /** A logger whose lines carry the tool's id and the call's id. */
  logger: ToolLogger;
  /**
   * Reports how far the call has got: `progress` (work done, in the tool's own unit), `total` when known, and a
   * short `message`. Clients of the tasks extension read it (docs/protocol.md 9.3). The server keeps a few reports
   * a second at most, only those whose `progress` increases, and cuts long messages; a no-op for a call nobody
   * can follow (no call_id). It may be taken out of the context (`{ progress }`).
   */
  progress: (update: CallProgress) => void;
}

/** Options of an {@link OxpToolError}, named as on the wire but in camelCase. */
export interface OxpToolErrorOptions {
  developerMessage?: string;
  canRetry?: boolean;
  additionalPromptContent?: string;
  /** A whole number of milliseconds; fractions are rounded up. */
  retryAfterMs?: number;
  cause?: unknown;
}

/**
 * Thrown by a tool to fail on purpose: its fields reach the client unchanged as the response's `error`.
 *
 * @example
 * throw new OxpToolError("Doorbell ID not found", { canRetry: true, retryAfterMs: 500 });
 */
export class OxpToolError extends Error {
  override name = "OxpToolError";
  readonly developerMessage: string | undefined;
  readonly canRetry: boolean | undefined;
  readonly additionalPromptContent: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: OxpToolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.developerMessage = options.developerMessage;
    this.canRetry = options.canRetry;
    this.additionalPromptContent = options.additionalPromptContent;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** The `error` object of the CallToolResponse. */
  toToolError(): ToolError {
    const error: ToolError = { message: this.message };
    if (this.developerMessage !== undefined) {
      error.developer_message = this.developerMessage;
    }
    if (this.canRetry !== undefined) {
      error.can_retry = this.canRetry;
    }
    if (this.additionalPromptContent !== undefined) {
      error.additional_prompt_content = this.additionalPromptContent;
    }
    if (this.retryAfterMs !== undefined && Number.isFinite(this.retryAfterMs)) {
      error.retry_after_ms = Math.max(0, Math.ceil(this.retryAfterMs));
    }
    return error;
  }
}

/** A JSON Schema object a tool author writes; `null` as an output schema means "returns nothing". */
export type SchemaObject = Exclude<JSONSchema, boolean>;

/** The value a tool returns for an output schema: the schema's type, or nothing for `null`. */
// biome-ignore lint/suspicious/noConfusingVoidType: a tool whose output schema is null may simply not return.
export type ToolOutput<O> = O extends null ? void | null | undefined : O extends JSONSchema ? FromSchema<O> : unknown;

/**
 * The input a tool receives for an input schema: for a Standard Schema (zod, valibot, arktype), the library's output
 * type, as the tool gets the value the library returns (defaults filled in, transforms applied); for a JSON Schema,
 * the type it describes.
 */
export type ToolInput<I> = I extends StandardSchemaV1
  ? StandardSchemaV1.InferOutput<I>
  : I extends JSONSchema
    ? FromSchema<I>
    : Record<string, unknown>;

/** What a tool's input may be described with: a JSON Schema object, or any Standard Schema (zod 4, valibot, arktype). */
export type InputSchema = SchemaObject | StandardSchemaV1;

/** What `defineTool` takes. */
export interface ToolSpec<I extends InputSchema, O extends SchemaObject | null> {
  /** The toolkit: the part of the id before the dot, e.g. `Calculator`. */
  toolkit: string;
  /** The tool's name within its toolkit, e.g. `Add`. */
  name: string;
  /** Three dot-separated integers, e.g. `1.0.0`. */
  version: string;
  description: string;
  /**
   * A JSON Schema for the input object (`{}` when the tool takes none), or a Standard Schema: a zod 4, arktype or
   * valibot schema (valibot's wrapped in `toStandardJsonSchema`) that validates the input and, through its Standard
   * JSON Schema converter, gives the JSON Schema the tool is listed with.
   */
  inputSchema: I;
  /**
   * The JSON Schema (draft 2020-12) to list a Standard Schema tool with, for a library with no Standard JSON Schema
   * converter, or to override its converter; the library still validates. Ignored for a JSON Schema `inputSchema`.
   */
  inputJsonSchema?: SchemaObject;
  /** A JSON Schema for the result, `{}` for any value, `null` when the tool returns nothing. */
  outputSchema: O;
  requirements?: ToolRequirements;
  /**
   * What the tool does to the world (`read_only`, `destructive`, `idempotent`, `open_world`, `title`): hints
   * listed to clients that ask for the annotations extension (docs/protocol.md 9.2). Checked at start-up.
   */
  annotations?: ToolAnnotations;
  /** Marks the tool deprecated: what to use instead. Listed with the annotations extension. */
  deprecationMessage?: string;
  /**
   * OAuth scopes a caller's access token must hold, beside `oxp:tools:call`, to call this tool (the oauth
   * extension, docs/protocol.md 9.6): listed as `required_scopes` to clients that ask for it, and checked for
   * calls admitted by an access token. API keys and section 5's JWTs are not limited by scopes.
   */
  requiredScopes?: readonly string[];
  /** Overrides the server's default time limit for this tool. */
  timeoutMs?: number;
  /** Overrides the server's time limit for this tool's asynchronous calls (the tasks extension). */
  asyncTimeoutMs?: number;
  run(input: ToolInput<I>, ctx: ToolContext): ToolOutput<O> | Promise<ToolOutput<O>>;
}

/** A tool as the server holds it; made by {@link defineTool}. */
export interface Tool {
  readonly toolkit: string;
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly inputSchema: SchemaObject;
  readonly outputSchema: SchemaObject | null;
  readonly requirements: ToolRequirements | undefined;
  readonly annotations?: ToolAnnotations | undefined;
  readonly deprecationMessage?: string | undefined;
  readonly requiredScopes?: readonly string[] | undefined;
  readonly timeoutMs: number | undefined;
  readonly asyncTimeoutMs?: number | undefined;
  /**
   * The Standard Schema the input is validated with, instead of `inputSchema` (then only the JSON Schema the tool
   * is listed with): the server runs the tool with the library's output for the input (defaults, transforms).
   */
  readonly inputStandardSchema?: StandardSchemaV1 | undefined;
  run(input: Record<string, unknown>, ctx: ToolContext): unknown;
}

/**
 * Defines a tool. Input and result are typed from the schemas (written inline, no `as const` needed). The input
 * schema may be a Standard Schema instead (see {@link ToolSpec.inputSchema}): its JSON Schema is made here, and a
 * schema that cannot be written as JSON Schema throws a ServerConfigError naming the tool.
 *
 * @example
 * const add = defineTool({
 *   toolkit: "Calculator", name: "Add", version: "1.0.0", description: "Adds two numbers.",
 *   inputSchema: { type: "object", properties: { a: { type: "number", description: "A." },
 *     b: { type: "number", description: "B." } }, required: ["a", "b"], additionalProperties: false },
 *   outputSchema: { type: "number" },
 *   run: ({ a, b }) => a + b,
 * });
 */
export function defineTool<const I extends InputSchema, const O extends SchemaObject | null>(
  spec: ToolSpec<I, O>,
): Tool {
  const tool: Tool = {
    toolkit: spec.toolkit,
    name: spec.name,
    version: spec.version,
    description: spec.description,
    inputSchema: spec.inputSchema as SchemaObject,
    outputSchema: spec.outputSchema,
    requirements: spec.requirements,
    annotations: spec.annotations,
    deprecationMessage: spec.deprecationMessage,
    requiredScopes: spec.requiredScopes,
    timeoutMs: spec.timeoutMs,
    asyncTimeoutMs: spec.asyncTimeoutMs,
    run: spec.run as Tool["run"],
  };
  const input: unknown = spec.inputSchema;
  const id = `${spec.toolkit}.${spec.name}@${spec.version}`;
  if (!isStandardSchema(input)) {
    if (spec.inputJsonSchema !== undefined) {
      throw new ServerConfigError(
        `Tool '${id}' is refused: inputJsonSchema goes with a Standard Schema inputSchema (zod, valibot, arktype); a JSON Schema inputSchema is listed as it is`,
      );
    }
    return tool;
  }
  // A Standard Schema tool: listed with the JSON Schema its library writes (or `inputJsonSchema`), its input
  // validated by the library when the server calls it, and run with the library's output for that input.
  const standard: Tool = {
    ...tool,
    inputSchema: standardInputJsonSchema(id, input, spec.inputJsonSchema) as SchemaObject,
    inputStandardSchema: input,
  };
  if (spec.inputJsonSchema === undefined) {
    writtenByLibrary.add(standard);
  }
  return standard;
}

/** Tools whose listed input schema their schema library wrote (not `inputJsonSchema`): see {@link inputSchemaLibrary}. */
const writtenByLibrary = new WeakSet<Tool>();

/**
 * The schema library that wrote a tool's listed input schema (its Standard Schema vendor, `zod`...), for start-up
 * errors that say how to fix the schema in that library's terms; undefined for a schema its author wrote.
 */
export function inputSchemaLibrary(tool: Tool): string | undefined {
  return writtenByLibrary.has(tool) ? tool.inputStandardSchema?.["~standard"].vendor : undefined;
}
