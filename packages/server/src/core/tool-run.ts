/** A tool's run (docs/protocol.md 3.3 steps 7-8, 3.6): its time limit, its stops (timeout, shutdown, cancel, hang-up), its answer checked against its output schema. */
import { type CallToolResponse, formatSchemaErrors, type ToolError } from "@otc/types";
import { type CallOutcome, type CoreLogger, roundMs } from "./call-log.js";
import type { CallMeta } from "./call-meta.js";
import type { Clock, ClockTimer } from "./clock.js";
import type { OrPromise } from "./fast-path.js";
import type { RunLimits } from "./run-limits.js";
import type { LocalTask } from "./tasks.js";
import { OxpToolError } from "./tool.js";
import { RunContext } from "./tool-context.js";
import type { RegisteredTool } from "./tool-registry.js";

/** Why a call that got past its checks ended as it did. */
export type Outcome = Exclude<CallOutcome, "rejected">;

/** A call's response, why it ended so, and the tool's own promise when it was given up on before settling. */
export interface RunResult {
  response: CallToolResponse;
  outcome: Outcome;
  unsettled?: Promise<unknown>;
}

/** One run of a checked call, as {@link ToolRunner.run} takes it. */
export interface RunCall {
  callId: string;
  traceId: string | undefined;
  userId: string | undefined;
  tokens: Record<string, string>;
  secrets: Record<string, string>;
  extra: Record<string, unknown>;
  /** When the core took the call (performance.now()). */
  started: number;
  /** Who the run bounds count it against. */
  client: string;
  meta: CallMeta;
  /** Abort the run when its client goes away (a call without a call_id: nobody could collect its answer). */
  abortOnHangUp: boolean;
  /** The call's task, when it has a call_id: where its progress goes and its cancel comes from. */
  task: LocalTask | undefined;
  /** Set when the tool's schema library threw while checking the input: the run fails with that, as a tool would. */
  inputFailure?: { error: unknown } | undefined;
}

/** A run's time limit passed. */
export class ToolTimeout extends Error {
  override name = "ToolTimeout";
}

class ShuttingDown extends Error {
  override name = "ShuttingDown";
}

class ClientGone extends Error {
  override name = "ClientGone";
}

class CallCancelled extends Error {
  override name = "CallCancelled";
}

/** A tool run in progress, as shutdown sees it. */
interface ActiveRun {
  /** Aborts the run; it answers with a retryable "shutting down" failure. */
  shutDown(): void;
  /** The race between the tool and its time limit (or shutdown): once it settles, the answer follows at once. */
  raced: Promise<unknown>;
}

/** A run that ended in a failure: its response, why, and the tool's promise if it was given up on unsettled. */
function failedWith(
  call: { callId: string; started: number },
  error: ToolError,
  outcome: Outcome,
  unsettled?: Promise<unknown>,
): RunResult {
  return {
    response: { call_id: call.callId, duration: roundMs(performance.now() - call.started), success: false, error },
    outcome,
    ...(unsettled ? { unsettled } : {}),
  };
}

/** What a tool's throw (or its time limit, or shutdown) answers (docs/protocol.md 3.6). */
function failedRun(call: { callId: string; started: number }, error: unknown, unsettled?: Promise<unknown>): RunResult {
  if (error instanceof ToolTimeout) {
    const toolError = { message: "The tool did not finish in time", developer_message: error.message, can_retry: true };
    return failedWith(call, toolError, "timeout", unsettled);
  }
  if (error instanceof ShuttingDown) {
    const toolError = { message: "The server is shutting down", developer_message: error.message, can_retry: true };
    return failedWith(call, toolError, "shutdown", unsettled);
  }
  if (error instanceof CallCancelled) {
    const toolError = { message: "The call was cancelled", developer_message: error.message, can_retry: false };
    return failedWith(call, toolError, "cancelled", unsettled);
  }
  if (error instanceof ClientGone) {
    // Nobody reads this answer: it is for the log line and the metrics.
    const toolError = { message: "The client went away", developer_message: error.message, can_retry: true };
    return failedWith(call, toolError, "disconnected", unsettled);
  }
  if (error instanceof OxpToolError) {
    return failedWith(call, error.toToolError(), "tool_error");
  }
  return failedWith(
    call,
    {
      message: "The tool failed to run",
      developer_message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      can_retry: false,
    },
    "error",
  );
}

/** Runs tools within their time limits and the run bounds, and stops them all at shutdown. */
export class ToolRunner {
  /** Tool runs in progress, for {@link abortAll}. */
  private readonly active = new Set<ActiveRun>();
  /** Set by {@link abortAll}: a run that starts afterwards (its call was accepted, then waited) is stopped at once. */
  private shutDown = false;

  constructor(
    private readonly options: {
      clock: Clock;
      logger: CoreLogger;
      limits: RunLimits;
      defaultTimeoutMs: number;
      asyncTimeoutMs: number;
    },
  ) {}

  /** A call's time limit: its tool's, else the server's; asynchronous calls have their own (docs/protocol.md 9.3). */
  timeLimitOf(registered: RegisteredTool, async: boolean): number {
    const { tool } = registered;
    return async
      ? (tool.asyncTimeoutMs ?? this.options.asyncTimeoutMs)
      : (tool.timeoutMs ?? this.options.defaultTimeoutMs);
  }

  /**
   * Aborts every running call through its AbortSignal and answers each with a retryable failure saying
   * the server is shutting down; resolves once those answers exist. For the end of a graceful drain.
   */
  async abortAll(): Promise<void> {
    this.shutDown = true;
    const runs = [...this.active];
    for (const active of runs) {
      active.shutDown();
    }
    const ignore = () => {};
    await Promise.all(runs.map((active) => active.raced.then(ignore, ignore)));
  }

  /**
   * Runs the tool with its time limit and turns whatever happens into a CallToolResponse: at once for a
   * tool that answers synchronously, through a promise for one that returns a promise.
   */
  run(registered: RegisteredTool, input: Record<string, unknown>, call: RunCall): OrPromise<RunResult> {
    const { tool, definition } = registered;
    const async = call.task?.async === true;
    const { limits, clock } = this.options;
    limits.check(call.client, async);
    const context = new RunContext(call, this.options.logger, definition.id);
    let returned: unknown;
    try {
      if (call.inputFailure) {
        throw call.inputFailure.error;
      }
      returned = tool.run(input, context);
    } catch (error) {
      return failedRun(call, error);
    }
    // A tool that answered at once needs no time limit, nor a race: only a pending one is raced against it.
    if (typeof (returned as PromiseLike<unknown> | null)?.then !== "function") {
      return this.settle(registered, call, returned);
    }
    const timeoutMs = this.timeLimitOf(registered, async);
    return (async () => {
      let result: unknown;
      const running = Promise.resolve(returned);
      let timer: ClockTimer | undefined;
      let stop: (error: Error) => void = () => {};
      const stopped = new Promise<never>((_, reject) => {
        stop = (error) => {
          // Settled before the abort: a tool that rejects on its signal must not win the race with its own error.
          reject(error);
          context.stop(error);
        };
        timer = clock.setTimeout(
          () => stop(new ToolTimeout(`${definition.id} ran past its time limit of ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      let settled = false;
      // Attached before the race, so it runs first; it also keeps a late rejection of an abandoned tool handled.
      const markSettled = () => {
        settled = true;
      };
      running.then(markSettled, markSettled);
      const raced = Promise.race([running, stopped]);
      const active: ActiveRun = {
        shutDown: () => stop(new ShuttingDown("The server shut down before the tool finished")),
        raced,
      };
      this.active.add(active);
      if (this.shutDown) {
        active.shutDown();
      }
      call.task?.cancelWith(() => stop(new CallCancelled("A client cancelled the call.")));
      limits.enter(call.client, async);
      const hangUp = call.abortOnHangUp ? call.meta.signal : undefined;
      // Made only for a run its client's hang-up can stop.
      const onHangUp = hangUp
        ? () => stop(new ClientGone("The client closed its connection before the tool finished"))
        : undefined;
      try {
        if (hangUp && onHangUp) {
          if (hangUp.aborted) {
            onHangUp();
          } else {
            hangUp.addEventListener("abort", onHangUp, { once: true });
          }
        }
        result = await raced;
      } catch (error) {
        // A run that has not settled when given up on still holds its call_id until it does.
        return failedRun(call, error, settled ? undefined : running);
      } finally {
        clock.clearTimeout(timer);
        if (hangUp && onHangUp) {
          hangUp.removeEventListener("abort", onHangUp);
        }
        this.active.delete(active);
        limits.leave(call.client, async);
      }
      // Checking and copying an asynchronous tool's value is work after a wait.
      return call.meta.afterWait
        ? call.meta.afterWait(() => this.settle(registered, call, result))
        : this.settle(registered, call, result);
    })();
  }

  /** The response for what a tool returned: its value as JSON, checked against the tool's output_schema. */
  private settle(registered: RegisteredTool, call: { callId: string; started: number }, result: unknown): RunResult {
    const { definition } = registered;
    let value: unknown = null;
    if (definition.output_schema !== null && result !== undefined) {
      try {
        // A copy that is JSON: what the client will read (a string or a finite number already is).
        value =
          typeof result === "string" ||
          (typeof result === "number" && Number.isFinite(result)) ||
          typeof result === "boolean"
            ? result
            : JSON.parse(JSON.stringify(result) ?? "null");
      } catch (error) {
        return failedWith(
          call,
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
      const details = formatSchemaErrors(errors, { root: "(value)", max: 10 });
      return failedWith(
        call,
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
