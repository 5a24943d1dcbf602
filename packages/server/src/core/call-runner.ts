/** A call's steps (docs/protocol.md 3.3 steps 4-8): the tool resolved, its requirements, its input checked, its run once per call_id, its answer told. */
import {
  AUTHORIZATION_CHALLENGES_PATH_TEMPLATE,
  type CallToolRequest,
  type CallToolResponse,
  requestedToolVersion,
} from "@otc/types";
import type { AuthorizationProvider, TokenStore } from "./authorization.js";
import type { CallReport } from "./call-log.js";
import type { CallMeta } from "./call-meta.js";
import type { Clock, ClockTimer } from "./clock.js";
import { shorten, WireError } from "./errors.js";
import { isPending, type OrPromise } from "./fast-path.js";
import type { AsyncCall, IdempotencyGate } from "./idempotency-gate.js";
import { invalidInput } from "./input-validation.js";
import { type ResolvedRequirements, resolveRequirements, sentCredentials } from "./requirements.js";
import { orUnavailable } from "./shared-state.js";
import type { InputCheck } from "./standard-schema.js";
import type { LocalTask } from "./tasks.js";
import type { RegisteredTool, ToolRegistry } from "./tool-registry.js";
import { type RunResult, type ToolRunner, ToolTimeout } from "./tool-run.js";

/** The path, below the base URL, of a challenge's check_url (the id follows): the spec's path without `/{challenge_id}`. */
export const CHALLENGE_CHECK_PATH = AUTHORIZATION_CHALLENGES_PATH_TEMPLATE.replace("/{challenge_id}", "");

/** A call the runner is executing: what each of its steps reads. */
interface CallInProgress {
  readonly request: CallToolRequest;
  readonly meta: CallMeta;
  readonly asyncCall: AsyncCall | undefined;
  /** When the core took the call (performance.now()). */
  readonly started: number;
  readonly traceId: string | undefined;
  /** The tool, once its id resolved. */
  registered: RegisteredTool | undefined;
}

/** What {@link CallRunner} works with: the parts of the core a call goes through. */
export interface CallRunnerParts {
  registry: ToolRegistry;
  providers: ReadonlyMap<string, AuthorizationProvider>;
  tokens: TokenStore;
  secrets: Readonly<Record<string, string>>;
  report: CallReport;
  gate: IdempotencyGate;
  runner: ToolRunner;
  clock: Clock;
}

/** What a tool without `required_scopes` requires. */
const NO_SCOPES: readonly string[] = [];

/** Runs calls through their steps, knowing nothing of HTTP: plain data in, a response (or a thrown {@link WireError}) out. */
export class CallRunner {
  constructor(private readonly parts: CallRunnerParts) {}

  /**
   * Runs a call: resolves it, checks it, runs it once per (principal, call_id), and tells how it ended. Answers
   * without a promise when nothing waits (the fast path, fast-path.ts). Throws (or rejects with) a refusal.
   */
  execute(request: CallToolRequest, meta: CallMeta, asyncCall: AsyncCall | undefined): OrPromise<CallToolResponse> {
    const call: CallInProgress = {
      request,
      meta,
      asyncCall,
      started: performance.now(),
      traceId: request.trace_id ?? meta.traceId,
      registered: undefined,
    };
    const { report } = this.parts;
    report.started();
    let ran: OrPromise<RunResult>;
    try {
      ran = this.start(call);
    } catch (error) {
      report.refused(call, call.registered?.definition.id, error);
      throw error;
    }
    if (isPending(ran)) {
      return ran.then(
        (answer) => this.finished(call, answer),
        (error: unknown) => {
          report.refused(call, call.registered?.definition.id, error);
          throw error;
        },
      );
    }
    return this.finished(call, ran);
  }

  private finished(call: CallInProgress, answer: RunResult): CallToolResponse {
    this.parts.report.finished(
      call,
      (call.registered as RegisteredTool).definition.id,
      answer.response,
      answer.outcome,
    );
    return answer.response;
  }

  /** The steps up to the run: the tool, its requirements, its input. */
  private start(call: CallInProgress): OrPromise<RunResult> {
    const { request, meta } = call;
    const registered = this.resolve(request.tool_id);
    call.registered = registered;
    meta.requireScopes?.(registered.definition.required_scopes ?? NO_SCOPES);
    const requirements = registered.definition.requirements;
    // Without requirements nothing is looked up: no store, no wait.
    if (!requirements) {
      return this.checkInput(call, registered, sentCredentials(request.context));
    }
    const { providers, tokens, secrets, report } = this.parts;
    return orUnavailable(() =>
      resolveRequirements(requirements, request.context, {
        providers,
        tokens,
        serverSecrets: secrets,
        // Read only when a challenge is started: an adapter may have to work it out, or refuse to.
        get baseUrl() {
          return meta.baseUrl;
        },
        checkPath: CHALLENGE_CHECK_PATH,
        principal: meta.principal,
      }),
    ).then(
      (resolved) => this.checkInput(call, registered, resolved),
      (error: unknown) => {
        if (error instanceof WireError && error.details.missingRequirements?.authorization) {
          for (const challenge of error.details.missingRequirements.authorization) {
            // A challenge id is `<provider id>.<random>`.
            if (challenge.url) {
              report.challengeStarted(challenge.id.split(".")[0] ?? challenge.id);
            }
          }
        }
        throw error;
      },
    );
  }

  private resolve(toolId: string): RegisteredTool {
    const lookup = this.parts.registry.lookup(toolId);
    if (lookup.found) {
      return lookup.registered;
    }
    if (lookup.reason === "invalid_id") {
      throw new WireError("bad_request", `Tool id '${shorten(toolId)}' is not valid`, {
        developerMessage: "A tool id looks like Toolkit.Tool, Toolkit.Tool@x or Toolkit.Tool@x.y.z.",
      });
    }
    const name = shorten(lookup.request.qualifiedName);
    throw new WireError("bad_request", `Tool '${name}' was not found`, {
      developerMessage:
        lookup.reason === "unknown_tool"
          ? `No tool named ${name} is served here.`
          : `${name} version ${requestedToolVersion(lookup.request)} is not available; available versions: ${lookup.available.join(", ")}.`,
    });
  }

  /**
   * The input check: the configured validator's on the input as sent, or, for a tool whose schema library
   * validates it, the library's, whose value (defaults filled in, transforms applied) is what the tool runs with.
   */
  private checkInput(
    call: CallInProgress,
    registered: RegisteredTool,
    resolved: ResolvedRequirements,
  ): OrPromise<RunResult> {
    const input = call.request.input ?? {};
    const allErrors = call.meta.allErrors !== false;
    if (registered.parse === undefined) {
      const errors = registered.input.errors(input, allErrors);
      if (errors) {
        throw invalidInput(errors);
      }
      return this.runChecked(call, registered, resolved, { input, runInput: input });
    }
    const parsed = registered.parse(input, allErrors);
    const toRun = (checked: InputCheck): OrPromise<RunResult> => {
      if ("issues" in checked) {
        throw invalidInput(checked.issues);
      }
      // The call_id record keeps the input as sent.
      return "failure" in checked
        ? this.runChecked(call, registered, resolved, { input, runInput: input, inputFailure: checked })
        : this.runChecked(call, registered, resolved, { input, runInput: checked.value as Record<string, unknown> });
    };
    return isPending(parsed) ? this.checkedInTime(registered, parsed, call.asyncCall).then(toRun) : toRun(parsed);
  }

  /** Runs a checked call once per (principal, call_id). */
  private runChecked(
    call: CallInProgress,
    registered: RegisteredTool,
    resolved: ResolvedRequirements,
    inputs: { input: Record<string, unknown>; runInput: Record<string, unknown>; inputFailure?: { error: unknown } },
  ): OrPromise<RunResult> {
    const { request, meta, asyncCall, started, traceId } = call;
    const { input, runInput, inputFailure } = inputs;
    const client = meta.client ?? meta.principal;
    // Without a call_id nobody can collect the answer of a client that went away: its run is stopped.
    const abortOnHangUp = request.call_id === undefined && !asyncCall;
    const { runner } = this.parts;
    const run = (callId: string, task?: LocalTask) =>
      runner.run(registered, runInput, {
        callId,
        inputFailure,
        traceId,
        userId: request.context?.user_id || undefined,
        tokens: resolved.tokens,
        secrets: resolved.secrets,
        extra: request.context ?? {},
        started,
        client,
        meta,
        abortOnHangUp,
        task,
      });
    return this.parts.gate.once({ request, registered, meta, input, run, async: asyncCall });
  }

  /**
   * An asynchronous input check (a schema library's async refinement, the tool author's code) within the tool's
   * time limit: one that never settles would otherwise hold the request and its client's share for ever. Past the
   * limit the call fails as a tool that ran past it does (`can_retry: true`), without running the tool.
   */
  private checkedInTime(
    registered: RegisteredTool,
    checking: Promise<InputCheck>,
    asyncCall: AsyncCall | undefined,
  ): Promise<InputCheck> {
    const { runner, clock } = this.parts;
    const timeoutMs = runner.timeLimitOf(registered, asyncCall !== undefined);
    let timer: ClockTimer | undefined;
    const late = new Promise<InputCheck>((resolve) => {
      timer = clock.setTimeout(() => {
        const error = new ToolTimeout(
          `${registered.definition.id}'s input check ran past the tool's time limit of ${timeoutMs} ms`,
        );
        resolve({ failure: true, error });
      }, timeoutMs);
    });
    return Promise.race([checking, late]).finally(() => clock.clearTimeout(timer));
  }
}
