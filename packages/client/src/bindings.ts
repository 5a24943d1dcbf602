/** The runtime half of typed tool bindings: `otc codegen` writes the types, `bindTools` the calls. */
import type { CallToolContext } from "@otc/types";
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
    bound[id] = async (input, options = {}) => {
      const response = await client.callTool(
        {
          tool_id: id,
          input: input as Record<string, unknown>,
          ...(options.callId ? { call_id: options.callId } : {}),
          ...(options.context ? { context: options.context } : {}),
          ...(options.traceId ? { trace_id: options.traceId } : {}),
        },
        options.signal ? { signal: options.signal } : {},
      );
      if (!response.success) {
        throw new OxpToolCallError(response.call_id, response.error);
      }
      return response.value;
    };
  }
  return bound as BoundTools<M>;
}
