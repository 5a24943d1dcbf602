/** The protocol core: lists tools and runs calls (resolution, requirements, input, idempotency, timeout, output). */
import { createHash, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { CallToolRequest, CallToolResponse, ToolError, ToolListResponse } from "@otc/types";
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  MemoryTokenStore,
  type TokenStore,
} from "./authorization.js";
import { ServerConfigError, WireError } from "./errors.js";
import { type IdempotencyStore, MemoryIdempotencyStore } from "./idempotency-store.js";
import { toParameterErrors } from "./input-validation.js";
import { resolveRequirements } from "./requirements.js";
import { OxpToolError, type Tool, type ToolLogger } from "./tool.js";
import { type RegisteredTool, ToolRegistry } from "./tool-registry.js";

/** A logger the core writes one line per call to (pino's shape). */
export interface CoreLogger extends ToolLogger {
  child(bindings: Record<string, unknown>): CoreLogger;
}

/** Options of {@link OxpCore}. */
export interface OxpCoreOptions {
  tools: readonly Tool[];
  /** Time limit for a tool that sets none, in milliseconds. Default 30,000. */
  defaultTimeoutMs?: number;
  /** Where call_id records live. Default: an in-memory store of 10,000 entries. */
  idempotencyStore?: IdempotencyStore;
  /** How long a finished call's response is kept for its call_id, in milliseconds. Default 24 h. */
  idempotencyRetentionMs?: number;
  /** Providers that can start authorization challenges, by their id. */
  authorizationProviders?: readonly AuthorizationProvider[];
  /** Tokens the server holds for (user, provider). Default: in memory. */
  tokenStore?: TokenStore;
  /** Secret values the server holds, by id; given to tools that require them when a call sends none. */
  secrets?: Readonly<Record<string, string>>;
  logger?: CoreLogger;
}

/** What the adapter knows about a call besides its body. */
export interface CallMeta {
  /** Who the server authenticated (`anonymous` when authentication is off). Part of the idempotency key. */
  principal: string;
  /** A trace id from a W3C `traceparent` header; the request's `trace_id` wins. */
  traceId?: string;
  /** The server's public base URL (no trailing slash), for challenge URLs. */
  baseUrl: string;
}

/** The path, below the base URL, of a challenge's check_url (the id follows). */
export const CHALLENGE_CHECK_PATH = "/authorization/challenges";

const DAY_MS = 24 * 60 * 60 * 1000;

/** JSON with object keys sorted, so equal values hash equally whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

const roundMs = (ms: number) => Math.round(ms * 1000) / 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Why a call ended as it did, for the log line. */
type Outcome = "success" | "tool_error" | "error" | "timeout" | "invalid_output" | "replayed";

class ToolTimeout extends Error {
  override name = "ToolTimeout";
}

/** A logger that drops everything. */
export const silentLogger: CoreLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

/** The protocol core, free of HTTP: plain data in, plain data (or a thrown {@link WireError}) out. */
export class OxpCore {
  readonly registry: ToolRegistry;
  private readonly defaultTimeoutMs: number;
  private readonly store: IdempotencyStore;
  private readonly retentionMs: number;
  private readonly providers: ReadonlyMap<string, AuthorizationProvider>;
  private readonly tokens: TokenStore;
  private readonly secrets: Readonly<Record<string, string>>;
  private readonly logger: CoreLogger;
  /** Calls running in this process, by call_id, so a duplicate can wait for the first. */
  private readonly running = new Map<string, Promise<CallToolResponse>>();

  constructor(options: OxpCoreOptions) {
    this.registry = new ToolRegistry(options.tools);
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
    if (!(this.defaultTimeoutMs > 0)) throw new ServerConfigError("defaultTimeoutMs must be a positive number");
    this.store = options.idempotencyStore ?? new MemoryIdempotencyStore();
    this.retentionMs = options.idempotencyRetentionMs ?? DAY_MS;
    const providers = new Map<string, AuthorizationProvider>();
    for (const provider of options.authorizationProviders ?? []) {
      if (!/^[A-Za-z0-9_-]+$/.test(provider.id)) {
        throw new ServerConfigError(`Authorization provider id '${provider.id}' must be letters, digits, '_' or '-'`);
      }
      if (providers.has(provider.id))
        throw new ServerConfigError(`Two authorization providers have the id '${provider.id}'`);
      providers.set(provider.id, provider);
    }
    this.providers = providers;
    this.tokens = options.tokenStore ?? new MemoryTokenStore();
    this.secrets = options.secrets ?? {};
    this.logger = options.logger ?? silentLogger;
  }

  /** The GET /tools body. */
  listTools(): ToolListResponse {
    return { items: [...this.registry.list()] };
  }

  /** A challenge's status for its check_url; a 404 when no provider knows it. */
  async checkChallenge(challengeId: string): Promise<{ status: ChallengeStatus }> {
    const provider = this.providers.get(challengeId.split(".")[0] ?? "");
    const status = provider ? await provider.checkChallenge(challengeId) : undefined;
    if (!status) {
      throw new WireError("not_found", "No such authorization challenge", {
        developerMessage: "The challenge id is unknown, or the challenge has expired.",
      });
    }
    return { status };
  }

  /**
   * Runs a call (PROTOCOL.md 3.3 steps 4-7) and returns its CallToolResponse. Throws a {@link WireError}
   * (400 or 422) when the call fails before its tool runs. Tool failures are responses, never throws.
   * `request` is what `parseCallBody` returned: the body's shape and depth are checked there, once.
   */
  async call(request: CallToolRequest, meta: CallMeta): Promise<CallToolResponse> {
    const started = performance.now();
    const traceId = request.trace_id ?? meta.traceId;
    // One line per call, each field once: the requested id until it resolves, then the resolved one.
    const fields = { tool_id: request.tool_id, call_id: request.call_id, trace_id: traceId };
    try {
      const registered = this.resolve(request.tool_id);
      const resolved = await resolveRequirements(registered.definition.requirements, request.context, {
        providers: this.providers,
        tokens: this.tokens,
        serverSecrets: this.secrets,
        baseUrl: meta.baseUrl,
        checkPath: CHALLENGE_CHECK_PATH,
      });
      const input = request.input ?? {};
      const errors = registered.input.errors(input);
      if (errors) {
        throw new WireError("invalid_input", "Some input parameters are invalid", {
          parameterErrors: toParameterErrors(errors),
        });
      }
      const run = (callId: string) =>
        this.run(registered, input, {
          callId,
          traceId,
          userId: request.context?.user_id || undefined,
          ...resolved,
          extra: request.context ?? {},
          started,
        });
      const { response, outcome } = await this.idempotent(request, registered, meta, input, run);
      this.logger.info(
        {
          ...fields,
          tool_id: registered.definition.id,
          requested_tool_id: request.tool_id,
          call_id: response.call_id,
          outcome,
          duration_ms: roundMs(performance.now() - started),
        },
        "tool call",
      );
      return response;
    } catch (error) {
      if (error instanceof WireError) {
        this.logger.info(
          {
            ...fields,
            outcome: "rejected",
            status: error.status,
            reason: error.message,
            duration_ms: roundMs(performance.now() - started),
          },
          "tool call",
        );
      }
      throw error;
    }
  }

  private resolve(toolId: string): RegisteredTool {
    const lookup = this.registry.lookup(toolId);
    if (lookup.found) return lookup.registered;
    const shown = toolId.length > 128 ? `${toolId.slice(0, 128)}...` : toolId;
    if (lookup.reason === "invalid_id") {
      throw new WireError("bad_request", `Tool id '${shown}' is not valid`, {
        developerMessage: "A tool id looks like Toolkit.Tool, Toolkit.Tool@x or Toolkit.Tool@x.y.z.",
      });
    }
    const [name, version] = toolId.split("@");
    throw new WireError("bad_request", `Tool '${name}' was not found`, {
      developerMessage:
        lookup.reason === "unknown_tool"
          ? `No tool named ${name} is served here.`
          : `${name} version ${version?.includes(".") ? version : `${version}.0.0`} is not available; available versions: ${lookup.available.join(", ")}.`,
    });
  }

  /** Runs the call once per call_id (PROTOCOL.md 3.7): replays, waits for, or refuses duplicates. */
  private async idempotent(
    request: CallToolRequest,
    registered: RegisteredTool,
    meta: CallMeta,
    input: Record<string, unknown>,
    run: (callId: string) => Promise<{ response: CallToolResponse; outcome: Outcome }>,
  ): Promise<{ response: CallToolResponse; outcome: Outcome }> {
    const callId = request.call_id;
    if (callId === undefined) return run(randomUUID());
    const fingerprint = createHash("sha256")
      .update(canonicalJson([registered.definition.id, input, request.context?.user_id ?? null, meta.principal]))
      .digest("base64url");
    const timeoutMs = registered.tool.timeoutMs ?? this.defaultTimeoutMs;
    // A pending claim lapses if this instance dies, so a retry elsewhere is not blocked for a day.
    const held = await this.store.claim(callId, fingerprint, timeoutMs + 5_000);
    if (held) {
      if (held.fingerprint !== fingerprint) {
        throw new WireError("bad_request", "This call_id was already used for a different call", {
          developerMessage:
            "A call_id is an idempotency key: reuse it only to retry the same tool, input, user_id and credentials.",
        });
      }
      const response = held.response ?? (await this.waitFor(callId, fingerprint, timeoutMs + 5_000));
      if (response) return { response, outcome: "replayed" };
      // The first call was released (a retryable failure) or its claim lapsed: run it again.
      return this.idempotent(request, registered, meta, input, run);
    }
    const pending = run(callId).then(async (result) => {
      const { response } = result;
      if (response.success || response.error.can_retry !== true) {
        await this.store.complete(callId, { fingerprint, response }, this.retentionMs);
      } else {
        await this.store.release(callId);
      }
      return result;
    });
    const shared = pending.then((result) => result.response);
    this.running.set(callId, shared);
    shared.catch(() => this.store.release(callId)).finally(() => this.running.delete(callId));
    return pending;
  }

  /** Waits for the first call holding `callId`: in this process directly, elsewhere by polling the store. */
  private async waitFor(callId: string, fingerprint: string, maxMs: number): Promise<CallToolResponse | undefined> {
    const local = this.running.get(callId);
    if (local) return local.catch(() => undefined);
    const deadline = Date.now() + maxMs;
    while (Date.now() < deadline) {
      await sleep(25);
      const entry = await this.store.get(callId);
      if (!entry || entry.fingerprint !== fingerprint) return undefined;
      if (entry.response) return entry.response;
    }
    return undefined;
  }

  /** Runs the tool with its time limit and turns whatever happens into a CallToolResponse. */
  private async run(
    registered: RegisteredTool,
    input: Record<string, unknown>,
    call: {
      callId: string;
      traceId: string | undefined;
      userId: string | undefined;
      tokens: Record<string, string>;
      secrets: Record<string, string>;
      extra: Record<string, unknown>;
      started: number;
    },
  ): Promise<{ response: CallToolResponse; outcome: Outcome }> {
    const { tool, definition } = registered;
    const timeoutMs = tool.timeoutMs ?? this.defaultTimeoutMs;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new ToolTimeout(`${definition.id} ran past its time limit of ${timeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, timeoutMs);
    });
    const failure = (error: ToolError, outcome: Outcome) => ({
      response: {
        call_id: call.callId,
        duration: roundMs(performance.now() - call.started),
        success: false as const,
        error,
      },
      outcome,
    });
    let result: unknown;
    try {
      const running = Promise.resolve().then(() =>
        tool.run(input, {
          callId: call.callId,
          traceId: call.traceId,
          userId: call.userId,
          tokens: call.tokens,
          secrets: call.secrets,
          extra: call.extra,
          signal: controller.signal,
          logger: this.logger.child({ tool_id: definition.id, call_id: call.callId }),
        }),
      );
      running.catch(() => {}); // a tool abandoned at its time limit may still reject later
      result = await Promise.race([running, timeout]);
    } catch (error) {
      if (error instanceof ToolTimeout) {
        return failure(
          { message: "The tool did not finish in time", developer_message: error.message, can_retry: true },
          "timeout",
        );
      }
      if (error instanceof OxpToolError) return failure(error.toToolError(), "tool_error");
      return failure(
        {
          message: "The tool failed to run",
          developer_message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          can_retry: false,
        },
        "error",
      );
    } finally {
      clearTimeout(timer);
    }

    let value: unknown = null;
    if (definition.output_schema !== null && result !== undefined) {
      try {
        value = JSON.parse(JSON.stringify(result) ?? "null");
      } catch (error) {
        return failure(
          {
            message: "The tool returned an invalid result",
            developer_message: `The result is not JSON: ${error instanceof Error ? error.message : String(error)}`,
            can_retry: false,
          },
          "invalid_output",
        );
      }
    }
    const errors = definition.output_schema === null ? undefined : registered.output?.errors(value);
    if (errors) {
      const details = errors
        .slice(0, 10)
        .map((error) => `${error.instancePath || "(value)"} ${error.message ?? "is invalid"}`)
        .join("; ");
      return failure(
        {
          message: "The tool returned an invalid result",
          developer_message: `The result does not match the tool's output_schema: ${details}`,
          can_retry: false,
        },
        "invalid_output",
      );
    }
    return {
      response: { call_id: call.callId, duration: roundMs(performance.now() - call.started), success: true, value },
      outcome: "success",
    };
  }
}
