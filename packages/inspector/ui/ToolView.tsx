/** One tool: its definition (with its annotations and a copy button), the call form generated from its input schema, and the call's outcome, asynchronous calls included. */
import type { AsyncCall } from "@otc/client";
import type {
  CallStatus,
  CallToolContext,
  CallToolRequest,
  ToolAuthorizationChallenge,
  ToolDefinition,
} from "@otc/types";
import Form from "@rjsf/core";
import type { RJSFSchema } from "@rjsf/utils";
import validator from "@rjsf/validator-ajv8";
import { type FormEvent, useEffect, useMemo, useRef, useState } from "react";
import { AnnotationsView, ConfirmCall, Deprecation } from "./AnnotationsView.js";
import { needsConfirmation, titleOf } from "./annotations.js";
import { ErrorBoundary, messageOf } from "./error-boundary.js";
import { type HistoryEntry, MAX_EXCHANGES } from "./History.js";
import { describe, fromError, fromResponse, type Outcome, toErrorSchema } from "./outcome.js";
import { type Credentials, canOpen, canPoll, clientFor, type Exchange, newCallId } from "./session.js";
import { type TaskPhase, type TaskState, TaskView } from "./TaskView.js";

type Input = Record<string, unknown>;

/** How long each long poll of a running call's status asks the server to hold its answer (`Prefer: wait=N`). */
const LONG_POLL_SECONDS = 10;

/** The input schema as rjsf takes it: `$schema` dropped (Ajv would look the draft up), an empty schema as an object. */
function formSchema(tool: ToolDefinition): RJSFSchema {
  const { $schema: _ignored, ...schema } = (tool.input_schema ?? {}) as RJSFSchema & { $schema?: string };
  return schema.type === undefined && schema.properties === undefined ? { type: "object", ...schema } : schema;
}

async function copy(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

function Definition({ tool, annotated }: { tool: ToolDefinition; annotated: boolean }) {
  const [copied, setCopied] = useState<string>();
  const text = useMemo(() => JSON.stringify(tool, null, 2), [tool]);
  const requirements = tool.requirements;
  const title = annotated ? titleOf(tool) : undefined;
  return (
    <section className="definition" aria-labelledby="tool-title">
      <h2 id="tool-title">
        {tool.id.split("@")[0]} <span className="tool-version">{tool.version}</span>
      </h2>
      {title && <p className="tool-title">{title}</p>}
      {annotated && <Deprecation tool={tool} />}
      <p>{tool.description}</p>
      {annotated && <AnnotationsView tool={tool} />}
      <h3>Requirements</h3>
      <ul aria-label="Requirements">
        {!requirements?.user_id && !requirements?.authorization?.length && !requirements?.secrets?.length && (
          <li>None</li>
        )}
        {requirements?.user_id && <li>A user id (context.user_id)</li>}
        {requirements?.authorization?.map((auth) => (
          <li key={auth.id}>
            Authorization by <strong>{auth.id}</strong>
            {auth.oauth2?.scopes?.length ? ` (scopes: ${auth.oauth2.scopes.join(", ")})` : ""}
          </li>
        ))}
        {requirements?.secrets?.map((secret) => (
          <li key={secret.id}>
            Secret <code>{secret.id}</code>
          </li>
        ))}
      </ul>
      <details open>
        <summary>Definition (JSON)</summary>
        <section aria-label="Tool definition">
          <pre>{text}</pre>
        </section>
      </details>
      <button
        type="button"
        onClick={async () => setCopied((await copy(text)) ? "Copied" : "Copy failed: select the text")}
      >
        Copy definition
      </button>
      <span role="status" className="copied">
        {copied}
      </span>
    </section>
  );
}

/** True when the page polls the challenge's check_url: it has one, on the named server's origin. */
const pollable = (challenge: ToolAuthorizationChallenge, credentials: Credentials) =>
  Boolean(challenge.check_url && canPoll(challenge.check_url, credentials.serverUrl));

/**
 * A challenge: open its page, see its status live (polling check_url), retry when it is completed.
 * check_url is polled with the server's credentials, so only on that server's origin; the page is
 * opened only when it is an http(s) URL.
 */
function Challenge(props: {
  challenge: ToolAuthorizationChallenge;
  credentials: Credentials;
  onStatus: (status: string) => void;
}) {
  const { challenge, credentials, onStatus } = props;
  const [status, setStatus] = useState("pending");
  const [error, setError] = useState<string>();
  const polled = pollable(challenge, credentials);
  const openable = canOpen(challenge.url);
  useEffect(() => {
    if (!polled) {
      return;
    }
    const client = clientFor(credentials);
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const next = await client.checkAuthorization(challenge);
        if (stopped) {
          return;
        }
        setStatus(next);
        setError(undefined);
        onStatus(next);
        if (next !== "pending") {
          return;
        }
      } catch (failure) {
        if (stopped) {
          return;
        }
        setError(failure instanceof Error ? failure.message : String(failure));
      }
      timer = setTimeout(poll, 1000);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [challenge, credentials, onStatus, polled]);
  let statusText = `Authorization ${status}`;
  if (!challenge.check_url) {
    statusText = "No check_url: retry once you have approved";
  } else if (!polled) {
    statusText = `check_url is not on ${credentials.serverUrl}: not polled, so your credentials go nowhere else. Retry once you have approved`;
  }
  return (
    <li className="challenge">
      {openable ? (
        <button type="button" onClick={() => window.open(challenge.url, "_blank", "noopener,noreferrer")}>
          Open authorization page
        </button>
      ) : (
        <span className="bad">Not an http(s) URL: not opened</span>
      )}
      <span className="url">{challenge.url}</span>
      <p role="status" aria-label="Authorization status" className={`status ${polled ? status : "unpolled"}`}>
        {statusText}
        {error ? ` (checking failed: ${error})` : ""}
      </p>
    </li>
  );
}

function Result(props: { outcome: Outcome; credentials: Credentials; onRetry: () => void }) {
  const { outcome, credentials, onRetry } = props;
  const [statuses, setStatuses] = useState<Record<string, string>>({});
  const challenges = outcome.kind === "refused" ? outcome.challenges : [];
  const onStatus = useMemo(
    () =>
      Object.fromEntries(
        challenges.map((challenge) => [
          challenge.id,
          (status: string) =>
            setStatuses((all) => (all[challenge.id] === status ? all : { ...all, [challenge.id]: status })),
        ]),
      ),
    [challenges],
  );
  const allDone =
    challenges.length > 0 &&
    challenges.every((challenge) => !pollable(challenge, credentials) || statuses[challenge.id] === "completed");

  switch (outcome.kind) {
    case "success":
      return (
        <>
          <p className="ok">Success</p>
          <p className="meta">
            call_id <code>{outcome.response.call_id}</code>
            {` · ran for ${outcome.response.duration} ms on the server`}
          </p>
          <section aria-label="Value">
            <pre>{JSON.stringify(outcome.response.value ?? null, null, 2)}</pre>
          </section>
        </>
      );
    case "failure": {
      const { error } = outcome.response;
      return (
        <>
          <p className="bad">The tool failed: {error.message}</p>
          <dl aria-label="Tool error">
            <dt>Can retry</dt>
            <dd>{error.can_retry ? "yes" : "no"}</dd>
            {error.retry_after_ms !== undefined && (
              <>
                <dt>Retry after</dt>
                <dd>{error.retry_after_ms} ms</dd>
              </>
            )}
            {error.additional_prompt_content && (
              <>
                <dt>Additional prompt content</dt>
                <dd>{error.additional_prompt_content}</dd>
              </>
            )}
            {error.developer_message && (
              <>
                <dt>Developer message</dt>
                <dd>{error.developer_message}</dd>
              </>
            )}
          </dl>
          {error.can_retry && (
            <button type="button" onClick={onRetry}>
              Retry call
            </button>
          )}
        </>
      );
    }
    case "invalid":
      return (
        <>
          <p className="bad">422 {outcome.message}</p>
          <ul aria-label="Parameter errors">
            {Object.entries(outcome.parameterErrors).map(([key, message]) => (
              <li key={key}>
                <code>{key || "(input)"}</code>: {message}
              </li>
            ))}
          </ul>
        </>
      );
    case "refused":
      return (
        <>
          <p className="bad">
            {outcome.status} {outcome.message}
          </p>
          {outcome.developerMessage && <p className="developer">{outcome.developerMessage}</p>}
          {outcome.userIdMissing && <p>The call must name the end user: fill in the user id.</p>}
          {challenges.length > 0 && (
            <>
              <ul aria-label="Authorization challenges">
                {challenges.map((challenge) => (
                  <Challenge
                    key={challenge.id}
                    challenge={challenge}
                    credentials={credentials}
                    onStatus={onStatus[challenge.id] as (status: string) => void}
                  />
                ))}
              </ul>
              <button type="button" onClick={onRetry} disabled={!allDone}>
                Retry call
              </button>
            </>
          )}
        </>
      );
    case "unauthenticated":
      return (
        <p className="bad">
          401 {outcome.message}
          {outcome.developerMessage ? ` (${outcome.developerMessage})` : ""}
        </p>
      );
    default:
      return <p className="bad">{outcome.message}</p>;
  }
}

/** The context fields the tool's requirements ask for; nothing else is shown. */
interface ContextFields {
  userId: string;
  secrets: Record<string, string>;
  tokens: Record<string, string>;
}

function buildContext(tool: ToolDefinition, fields: ContextFields): CallToolContext | undefined {
  const requirements = tool.requirements;
  const context: CallToolContext = {};
  if ((requirements?.user_id || requirements?.authorization?.length) && fields.userId) {
    context.user_id = fields.userId;
  }
  const secrets = (requirements?.secrets ?? [])
    .filter((secret) => fields.secrets[secret.id])
    .map((secret) => ({ id: secret.id, value: fields.secrets[secret.id] as string }));
  if (secrets.length) {
    context.secrets = secrets;
  }
  const tokens = (requirements?.authorization ?? [])
    .filter((auth) => fields.tokens[auth.id])
    .map((auth) => ({ id: auth.id, token: fields.tokens[auth.id] as string }));
  if (tokens.length) {
    context.authorization = tokens;
  }
  return Object.keys(context).length ? context : undefined;
}

/** The definition as JSON for a fallback, whatever it holds. */
function definitionText(tool: ToolDefinition): string {
  try {
    return JSON.stringify(tool, null, 2);
  } catch (error) {
    return `(the definition cannot be shown: ${messageOf(error)})`;
  }
}

/** What the page shows for a tool whose view failed to render: the error and the definition as the server sent it. */
function BrokenTool({ tool, error }: { tool: ToolDefinition; error: unknown }) {
  return (
    <div className="tool-view">
      <section className="definition" aria-label="Tool error">
        <h2>{String(tool.id)}</h2>
        <p role="alert" className="bad">
          This tool cannot be shown: {messageOf(error)}
        </p>
        <details open>
          <summary>Definition (JSON)</summary>
          <section aria-label="Tool definition">
            <pre>{definitionText(tool)}</pre>
          </section>
        </details>
      </section>
    </div>
  );
}

type ToolViewProps = {
  tool: ToolDefinition;
  credentials: Credentials;
  /** The extensions the page uses with this server (from its discovery document). */
  extensions: readonly string[];
  onRecord: (entry: HistoryEntry) => void;
};

/** The asynchronous call being followed: stopped when the view goes (the call runs on), cancelled on request. */
interface Following {
  controller: AbortController;
  callId: string;
  /** The client's handle on the call, once the server runs it as a task. */
  call?: AsyncCall;
  /** The DELETE under way, once Cancel was pressed; its status says whether the call ended cancelled. */
  cancelling?: Promise<CallStatus | undefined>;
}

/**
 * One tool. A definition the page cannot render (a schema the form builder chokes on, from a server that
 * ignores the spec) shows an error in place of this tool only: the tool list and the other tools keep working.
 */
export function ToolView(props: ToolViewProps) {
  return (
    <ErrorBoundary fallback={(error) => <BrokenTool tool={props.tool} error={error} />}>
      <ToolViewBody {...props} />
    </ErrorBoundary>
  );
}

function ToolViewBody(props: ToolViewProps) {
  const { tool, credentials, extensions, onRecord } = props;
  const annotated = extensions.includes("annotations");
  const tasksOffered = extensions.includes("tasks");
  const schema = useMemo(() => formSchema(tool), [tool]);
  const [mode, setMode] = useState<"form" | "json">("form");
  const [formData, setFormData] = useState<Input>({});
  const [json, setJson] = useState("{}");
  const [jsonError, setJsonError] = useState<string>();
  const [validateFirst, setValidateFirst] = useState(false);
  const [fields, setFields] = useState<ContextFields>({ userId: "", secrets: {}, tokens: {} });
  const [pending, setPending] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>();
  const [lastRequest, setLastRequest] = useState<CallToolRequest>();
  const [runAsync, setRunAsync] = useState(false);
  const [confirming, setConfirming] = useState<CallToolRequest>();
  const [task, setTask] = useState<TaskState>();
  const following = useRef<Following>(undefined);
  const requirements = tool.requirements;
  const wantsUser = Boolean(requirements?.user_id || requirements?.authorization?.length);

  // Leaving the tool stops following its asynchronous call; the call itself runs on (the history says so).
  useEffect(() => () => following.current?.controller.abort(), []);

  const send = async (request: CallToolRequest) => {
    setPending(true);
    setLastRequest(request);
    setTask(undefined);
    const exchanges: Exchange[] = [];
    const started = performance.now();
    let result: Outcome;
    try {
      result = fromResponse(await clientFor(credentials, (exchange) => exchanges.push(exchange)).callTool(request));
    } catch (error) {
      result = fromError(error, credentials.serverUrl);
    }
    const durationMs = performance.now() - started;
    setOutcome(result);
    setPending(false);
    onRecord({
      id: `${request.call_id}-${Date.now()}`,
      toolId: tool.id,
      callId: request.call_id as string,
      at: new Date(),
      durationMs,
      summary: describe(result),
      exchanges,
    });
  };

  /** Updates the task panel of `callId`, if it still shows that call. */
  const updateTask = (callId: string, update: (task: TaskState) => TaskState) =>
    setTask((current) => (current?.callId === callId ? update(current) : current));

  /**
   * Calls asynchronously (the tasks extension, through the client's callToolAsync): follows the progress, then
   * shows the result as `send` does. The client builds every URL from the server's and the call's id (never from
   * a `Location`), and its requests go through the page's recording fetch, so the history shows each of them.
   */
  const sendAsync = async (request: CallToolRequest) => {
    const callId = request.call_id as string;
    const exchanges: Exchange[] = [];
    let omitted = 0;
    // The extensions the page read on connecting: the client asks for no discovery document again.
    const client = clientFor(
      credentials,
      (exchange) => {
        // Long polls of a long call add up: the history keeps the first ones and counts the rest.
        if (exchanges.length < MAX_EXCHANGES) {
          exchanges.push(exchange);
        } else {
          omitted++;
        }
      },
      extensions,
    );
    const mine: Following = { controller: new AbortController(), callId };
    following.current = mine;
    const { signal } = mine.controller;
    setPending(true);
    setLastRequest(request);
    setOutcome(undefined);
    setTask({ callId, phase: "starting" });
    const started = performance.now();
    const recordCall = (summary: string) =>
      onRecord({
        id: `${callId}-${Date.now()}`,
        toolId: tool.id,
        callId,
        at: new Date(),
        durationMs: performance.now() - started,
        summary,
        exchanges,
        omittedExchanges: omitted,
      });
    let result: Outcome;
    let phase: TaskPhase | undefined;
    let accepted = false;
    try {
      const call = await client.callToolAsync(request, {
        signal,
        pollWaitSeconds: LONG_POLL_SECONDS,
        onFollow: (mode, why) => updateTask(callId, (current) => ({ ...current, mode, why })),
      });
      if (!call.task) {
        // The server answered with the response itself: nothing to follow.
        result = fromResponse(await call.result());
      } else {
        accepted = true;
        mine.call = call;
        setTask({ callId, phase: "running" });
        // The latest progress the client knows first (the 202's), then each newer one, until the call ends.
        for await (const progress of call.progress) {
          updateTask(callId, (current) => ({ ...current, progress }));
        }
        const response = await call.result();
        // The result does not say whether the call was cancelled: its status does (Cancel's, or asked now).
        const cancelled = mine.cancelling ? await mine.cancelling : undefined;
        const last =
          cancelled && cancelled.status !== "running"
            ? cancelled
            : await call.status({ signal }).catch((error: unknown) => {
                if (signal.aborted) {
                  throw error;
                }
                return { call_id: callId, status: "completed" as const, result: response };
              });
        phase = last.status === "cancelled" ? "cancelled" : "completed";
        result = last.result
          ? fromResponse(last.result)
          : { kind: "local", message: "The call ended without a result" };
      }
    } catch (error) {
      if (signal.aborted) {
        recordCall("asynchronous: left running, no longer followed");
        return;
      }
      result = fromError(error, credentials.serverUrl);
      // Refused before it started (a 422, a 401): no task to show. Lost while followed: it may run on.
      phase = accepted ? "lost" : undefined;
    }
    if (following.current === mine) {
      following.current = undefined;
    }
    // No panel for a call that never ran asynchronously (refused, or answered at once).
    setTask((current) => {
      if (current?.callId !== callId) {
        return current;
      }
      return phase === undefined ? undefined : { ...current, phase };
    });
    setOutcome(result);
    setPending(false);
    recordCall(`asynchronous: ${phase === "cancelled" ? "cancelled" : describe(result)}`);
  };

  /** Cancel: the client's DELETE of the call; once it ended cancelled, the handle ends with it. */
  const cancel = () => {
    const current = following.current;
    if (!current?.call || current.cancelling) {
      return;
    }
    updateTask(current.callId, (shown) => ({ ...shown, phase: "cancelling", cancelError: undefined }));
    current.cancelling = current.call.cancel().catch((error: unknown) => {
      current.cancelling = undefined;
      updateTask(current.callId, (shown) => ({ ...shown, phase: "running", cancelError: messageOf(error) }));
      return undefined;
    });
  };

  /** Sends the call as the user chose: asynchronously when asked (and offered), else in one request. */
  const dispatch = (request: CallToolRequest) => {
    setConfirming(undefined);
    void (tasksOffered && runAsync ? sendAsync(request) : send(request));
  };

  const call = (input: Input) => {
    const context = buildContext(tool, fields);
    const request: CallToolRequest = { tool_id: tool.id, call_id: newCallId(), input, ...(context ? { context } : {}) };
    if (needsConfirmation(tool, annotated)) {
      setConfirming(request);
      return;
    }
    dispatch(request);
  };

  const submitJson = (event: FormEvent) => {
    event.preventDefault();
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (error) {
      setJsonError(`Not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      setJsonError("The input must be a JSON object");
      return;
    }
    setJsonError(undefined);
    setFormData(parsed as Input);
    call(parsed as Input);
  };

  const switchMode = (next: "form" | "json") => {
    if (next === "json") {
      setJson(JSON.stringify(formData ?? {}, null, 2));
    } else {
      try {
        const parsed = JSON.parse(json);
        if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
          setFormData(parsed as Input);
        }
      } catch {
        // The form keeps its last good data; the JSON error shows when that text is sent.
      }
    }
    setMode(next);
  };

  const extraErrors = outcome?.kind === "invalid" ? toErrorSchema(outcome.parameterErrors) : undefined;
  const callButton = (
    <button type="submit" className="primary" disabled={pending || confirming !== undefined}>
      {pending ? "Calling…" : "Call tool"}
    </button>
  );

  return (
    <div className="tool-view">
      <Definition tool={tool} annotated={annotated} />
      <section className="call" aria-labelledby="call-title">
        <h2 id="call-title">Call</h2>
        {/* Secret and token inputs are uncontrolled, so their values never reach a DOM attribute. */}
        {(wantsUser || requirements?.secrets?.length || requirements?.authorization?.length) && (
          <fieldset className="context">
            <legend>Context</legend>
            {wantsUser && (
              <label>
                User id
                <input
                  value={fields.userId}
                  onChange={(event) => setFields({ ...fields, userId: event.target.value })}
                />
              </label>
            )}
            {requirements?.secrets?.map((secret) => (
              <label key={secret.id}>
                Secret {secret.id}
                <input
                  type="password"
                  autoComplete="off"
                  onChange={(event) =>
                    setFields({ ...fields, secrets: { ...fields.secrets, [secret.id]: event.target.value } })
                  }
                />
              </label>
            ))}
            {requirements?.authorization?.map((auth) => (
              <label key={auth.id}>
                Token for {auth.id} (optional)
                <input
                  type="password"
                  autoComplete="off"
                  onChange={(event) =>
                    setFields({ ...fields, tokens: { ...fields.tokens, [auth.id]: event.target.value } })
                  }
                />
              </label>
            ))}
          </fieldset>
        )}
        {tasksOffered && (
          <label className="inline">
            <input type="checkbox" checked={runAsync} onChange={(event) => setRunAsync(event.target.checked)} />
            Run asynchronously: follow its progress, cancel it (the server's tasks extension)
          </label>
        )}
        <div role="tablist" aria-label="Input editor" className="tabs">
          <button type="button" role="tab" aria-selected={mode === "form"} onClick={() => switchMode("form")}>
            Form
          </button>
          <button type="button" role="tab" aria-selected={mode === "json"} onClick={() => switchMode("json")}>
            JSON
          </button>
        </div>
        {mode === "form" ? (
          <div role="tabpanel" aria-label="Form">
            {/* rjsf throws while rendering a schema it cannot follow (a nested $ref, say): the JSON input still works. */}
            <ErrorBoundary
              fallback={(error) => (
                <div className="form-error">
                  <p role="alert" className="bad">
                    The form cannot be built from this tool's input schema: {messageOf(error)}
                  </p>
                  <button type="button" onClick={() => switchMode("json")}>
                    Write the input as JSON
                  </button>
                </div>
              )}
            >
              <Form
                schema={schema}
                validator={validator}
                formData={formData}
                onChange={(event) => setFormData((event.formData ?? {}) as Input)}
                onSubmit={(event) => call((event.formData ?? {}) as Input)}
                noValidate={!validateFirst}
                noHtml5Validate
                showErrorList={false}
                extraErrors={extraErrors}
                idPrefix="input"
              >
                <label className="inline">
                  <input
                    type="checkbox"
                    checked={validateFirst}
                    onChange={(event) => setValidateFirst(event.target.checked)}
                  />
                  Check the input against the schema in the page before sending
                </label>
                {callButton}
              </Form>
            </ErrorBoundary>
          </div>
        ) : (
          <form role="tabpanel" aria-label="JSON" onSubmit={submitJson}>
            <label>
              Input JSON
              <textarea rows={10} spellCheck={false} value={json} onChange={(event) => setJson(event.target.value)} />
            </label>
            {jsonError && <p className="bad">{jsonError}</p>}
            {callButton}
          </form>
        )}
        {confirming && (
          <ConfirmCall tool={tool} onConfirm={() => dispatch(confirming)} onDismiss={() => setConfirming(undefined)} />
        )}
      </section>
      {(outcome || task) && (
        <section className="result" aria-labelledby="result-title" aria-live="polite">
          <h2 id="result-title">Result</h2>
          {task && <TaskView task={task} onCancel={cancel} />}
          {outcome && (
            <Result
              outcome={outcome}
              credentials={credentials}
              // The same call again (its call_id too): the user confirmed it when it was first sent.
              onRetry={() => lastRequest && dispatch({ ...lastRequest })}
            />
          )}
        </section>
      )}
    </div>
  );
}
