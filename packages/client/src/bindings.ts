/** The runtime half of typed tool bindings: `otc codegen` writes the types, `bindTools` and `bindAsyncTools` calls. */
import type { CallToolContext, CallToolRequest, CallToolResponse } from "@otc/types";
import { toModelText } from "./adapters.js";
import type { AsyncCall, AsyncCallOptions } from "./async-call.js";
import type { CallOptions, OxpClient } from "./client.js";
import { OxpToolCallError } from "./errors.js";

/** One tool's input and output types. */
export interface ToolTypes {
  input: unknown;
  output: unknown;
}

/** What generated bindings describe: each tool id's input and output types (an interface fits too). */
export type ToolMap<M = Record<string, ToolTypes>> = { [K in keyof M]: ToolTypes };

/** Options of one bound call. */
export interface BoundCallOptions extends CallOptions {
  /** The call's idempotency key; made for you when absent. */
  callId?: string;
  /** Secrets, tokens, user id and other context for the call. */
  context?: CallToolContext;
  traceId?: string;
}

/** One function per tool id, resolving with the tool's typed value and throwing OxpToolCallError when it fails. */
export type BoundTools<M extends ToolMap<M>> = {
  readonly [K in keyof M]: (input: M[K]["input"], options?: BoundCallOptions) => Promise<M[K]["output"]>;
};

/** Options of one bound asynchronous call: a bound call's, plus those of callToolAsync (AsyncCallOptions). */
export interface BoundAsyncCallOptions extends BoundCallOptions, AsyncCallOptions {}

/**
 * A call started by a bound asynchronous function: the {@link AsyncCall} handle, but `result()` resolves with the
 * tool's typed value, as the bound synchronous function does.
 */
export interface BoundAsyncCall<T> extends Omit<AsyncCall, "result"> {
  /**
   * The tool's value, once the call ended. Rejects with OxpToolCallError when the tool failed (a cancelled call
   * too: its error says it was cancelled), and with what {@link AsyncCall.result} rejects with otherwise.
   */
  result(): Promise<T>;
}

/**
 * One function per tool id that starts the call as a task (docs/protocol.md 9.3) and resolves with its typed
 * handle once the server accepted it; on a server without the tasks extension, a plain call and a settled handle.
 */
export type BoundAsyncTools<M extends ToolMap<M>> = {
  readonly [K in keyof M]: (
    input: M[K]["input"],
    options?: BoundAsyncCallOptions,
  ) => Promise<BoundAsyncCall<M[K]["output"]>>;
};

/** The request of a bound call: the tool id, its input and the options that go on the wire. */
function requestOf(id: string, input: unknown, options: BoundCallOptions): CallToolRequest {
  return {
    tool_id: id,
    input: input as Record<string, unknown>,
    ...(options.callId ? { call_id: options.callId } : {}),
    ...(options.context ? { context: options.context } : {}),
    ...(options.traceId ? { trace_id: options.traceId } : {}),
  };
}

/** A response's value; a failure is thrown as OxpToolCallError. */
function toolValue(response: CallToolResponse): unknown {
  if (!response.success) {
    // The message is the ToolError's, as a binding's always was; `outcome.text` is what a model would read.
    throw new OxpToolCallError({ kind: "tool-error", text: toModelText(response), response }, response.error.message);
  }
  return response.value;
}

/**
 * Binds tool ids to typed functions. Generated bindings call this for you.
 *
 * @example
 * const tools = createTools(client); // from the file `otc codegen` wrote
 * const sum: number = await tools["Calculator.Add@1.0.0"]({ a: 1, b: 2 });
 */
export function bindTools<M extends ToolMap<M>>(client: OxpClient, ids: readonly (keyof M & string)[]): BoundTools<M> {
  const bound: Record<string, (input: unknown, options?: BoundCallOptions) => Promise<unknown>> = {};
  for (const id of ids) {
    bound[id] = async (input, options = {}) =>
      toolValue(await client.callTool(requestOf(id, input, options), options.signal ? { signal: options.signal } : {}));
  }
  return bound as BoundTools<M>;
}

/**
 * Binds tool ids to typed functions that start each call with {@link OxpClient.callToolAsync}. Generated bindings
 * call this for you.
 *
 * @example
 * const tools = createAsyncTools(client); // from the file `otc codegen` wrote
 * const call = await tools["System.Sleep@1.0.0"]({ ms: 3000 });
 * for await (const { progress, total } of call.progress) console.log(`${progress}/${total ?? "?"}`);
 * const { slept_ms } = await call.result(); // typed; or: await call.cancel()
 */
export function bindAsyncTools<M extends ToolMap<M>>(
  client: OxpClient,
  ids: readonly (keyof M & string)[],
): BoundAsyncTools<M> {
  const bound: Record<string, (input: unknown, options?: BoundAsyncCallOptions) => Promise<BoundAsyncCall<unknown>>> =
    {};
  for (const id of ids) {
    bound[id] = async (input, options = {}) => {
      const { signal, cancelOnAbort, waitSeconds, pollWaitSeconds, onFollow } = options;
      const call = await client.callToolAsync(requestOf(id, input, options), {
        ...(signal ? { signal } : {}),
        ...(cancelOnAbort !== undefined ? { cancelOnAbort } : {}),
        ...(waitSeconds !== undefined ? { waitSeconds } : {}),
        ...(pollWaitSeconds !== undefined ? { pollWaitSeconds } : {}),
        ...(onFollow ? { onFollow } : {}),
      });
      return {
        callId: call.callId,
        task: call.task,
        progress: call.progress,
        status: (statusOptions) => call.status(statusOptions),
        cancel: (cancelOptions) => call.cancel(cancelOptions),
        result: async () => toolValue(await call.result()),
      };
    };
  }
  return bound as BoundAsyncTools<M>;
}
