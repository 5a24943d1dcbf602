/** The context a tool's run receives (docs/protocol.md 3.5): its call's ids, credentials, signal, logger and progress. */
import type { CallProgress } from "@otc/types";
import type { CoreLogger } from "./call-log.js";
import type { LocalTask } from "./tasks.js";
import type { ToolContext, ToolLogger } from "./tool.js";
import type { RunCall } from "./tool-run.js";

/** The progress function of a call nobody can follow (no call_id): reports go nowhere. */
const ignoreProgress = (_update: CallProgress): void => {};

/**
 * The context a tool's run receives. A class, not an object literal with getters: V8 keeps a literal's accessor
 * pair outside the young generation, so its closures (and the call they hold) survived every scavenge and were
 * promoted, a third of the node adapter's CPU per call (bench/results/notes.md, issue 21).
 */
export class RunContext implements ToolContext {
  readonly callId: string;
  readonly traceId: string | undefined;
  readonly userId: string | undefined;
  readonly tokens: Record<string, string>;
  readonly secrets: Record<string, string>;
  readonly extra: Record<string, unknown>;
  // Made when the tool first reads its signal or logger: most tools never do, and each costs per call.
  #controller: AbortController | undefined;
  #stopReason: Error | undefined;
  #toolLogger: ToolLogger | undefined;
  readonly #logger: CoreLogger;
  readonly #toolId: string;
  readonly #task: LocalTask | undefined;
  #progress: ((update: CallProgress) => void) | undefined;

  constructor(
    call: Pick<RunCall, "callId" | "traceId" | "userId" | "tokens" | "secrets" | "extra" | "task">,
    logger: CoreLogger,
    toolId: string,
  ) {
    this.callId = call.callId;
    this.traceId = call.traceId;
    this.userId = call.userId;
    this.tokens = call.tokens;
    this.secrets = call.secrets;
    this.extra = call.extra;
    this.#logger = logger;
    this.#toolId = toolId;
    this.#task = call.task;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#stopReason) {
        this.#controller.abort(this.#stopReason);
      }
    }
    return this.#controller.signal;
  }

  get logger(): ToolLogger {
    if (!this.#toolLogger) {
      this.#toolLogger = this.#logger.child({ tool_id: this.#toolId, call_id: this.callId });
    }
    return this.#toolLogger;
  }

  /**
   * Reports how far the call has got (the tasks extension, docs/protocol.md 9.3). Kept for a call with a call_id
   * (every asynchronous one has one), a few times a second at most and only when `progress` increases; a no-op
   * for any other call.
   */
  get progress(): (update: CallProgress) => void {
    // A function of its own, made on first read: a tool may take it out of the context (`{ progress }`).
    if (!this.#progress) {
      const task = this.#task;
      this.#progress = task ? (update) => task.report(update) : ignoreProgress;
    }
    return this.#progress;
  }

  /** Aborts the signal (now, or when the tool first reads it) with the reason the run was given up. */
  stop(reason: Error): void {
    this.#stopReason = reason;
    this.#controller?.abort(reason);
  }
}
