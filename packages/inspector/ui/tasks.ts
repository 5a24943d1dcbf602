/** The tasks extension from the page (docs/protocol.md 9.3): start a call asynchronously, follow it by its event stream or by long polling, and cancel it. */
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  errorFromResponse,
  OxpConnectionError,
  OxpProtocolError,
  OxpResponseTooLargeError,
  OxpTimeoutError,
} from "@otc/client";
import {
  type CallProgress,
  type CallStatus,
  type CallToolRequest,
  type CallToolResponse,
  TOOLS_CALL_PATH,
  TOOLS_CALLS_EVENTS_PATH_TEMPLATE,
  TOOLS_CALLS_PATH_TEMPLATE,
  validateCallProgress,
  validateCallStatus,
  validateCallToolResponse,
} from "@otc/types";
import { EventStreamParser } from "./event-stream.js";
import {
  type Credentials,
  credentialHeaders,
  type Exchange,
  HISTORY_BODY_BYTES,
  maskedExchange,
  recordingFetch,
} from "./session.js";

/** The extension's id, in discovery documents and the `OXP-Extensions` header. */
export const TASKS = "tasks";

/** How long the page asks the server to hold a status request about a running call (Prefer: wait=N, at most 30). */
export const LONG_POLL_SECONDS = 10;

/** The least time between two status requests: a server that answers a long poll at once is not asked in a loop. */
const MIN_POLL_INTERVAL_MS = 250;

/** The time limit of one request, beyond what a long poll asks the server to wait. */
const REQUEST_TIMEOUT_MS = 30_000;

/** What starting a call asynchronously gave: it ended at once (its response), or it runs (its status). */
export type Started = { kind: "ended"; response: CallToolResponse } | { kind: "accepted"; status: CallStatus };

/** What reading a call's event stream gave: its result, or why the stream could not give it (then the page polls). */
export type Streamed = { kind: "result"; response: CallToolResponse } | { kind: "broken"; reason: string };

/** The requests of the tasks extension for one server, with the user's credentials, each recorded for the history. */
export interface TaskClient {
  /**
   * POST /tools/call with `Prefer: respond-async`. Throws what callTool throws for a refused call (400, 401, 422,
   * 429 as the client's errors), so the page shows them as it does for any call.
   */
  start(request: CallToolRequest, signal?: AbortSignal): Promise<Started>;
  /** GET /tools/calls/{call_id}, held by the server up to `waitSeconds` while nothing changes. */
  status(callId: string, options?: { waitSeconds?: number; signal?: AbortSignal }): Promise<CallStatus>;
  /** GET /tools/calls/{call_id}/events: each valid progress to `onProgress`, then the result. */
  events(
    callId: string,
    options: { onProgress: (progress: CallProgress) => void; signal?: AbortSignal },
  ): Promise<Streamed>;
  /** DELETE /tools/calls/{call_id}: the call's status once cancelled (or as it ended, when it ended first). */
  cancel(callId: string, signal?: AbortSignal): Promise<CallStatus>;
}

/** The JSON of a body, or its text when it is not JSON (errorFromResponse then names what came). */
function parse(text: string): unknown {
  try {
    return text === "" ? undefined : JSON.parse(text);
  } catch {
    return text;
  }
}

/** A body's text, read up to `max` bytes: a longer answer is refused, its reading stopped there. */
async function boundedText(response: Response, max: number): Promise<string> {
  if (!response.body) {
    return "";
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let size = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      return text + decoder.decode();
    }
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new OxpResponseTooLargeError(response.status, max);
    }
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * The tasks extension's requests to the named server. They carry the headers @otc/client sends for these
 * credentials, `OXP-Extensions: tasks`, and go to the server's origin only (a redirect is refused, never followed):
 * the page builds each call's URL from the server's and the call's id, never from a `Location` the server sent.
 */
export function taskClient(credentials: Credentials, record: (exchange: Exchange) => void): TaskClient {
  const base = credentials.serverUrl.replace(/\/+$/, "");
  const recorded = recordingFetch(record);
  const callUrl = (template: string, callId: string) =>
    `${base}${template.replace("{call_id}", encodeURIComponent(callId))}`;

  const headersFor = async (extra: Record<string, string>) => {
    const headers = await credentialHeaders(credentials);
    headers.set("OXP-Extensions", TASKS);
    for (const [name, value] of Object.entries(extra)) {
      headers.set(name, value);
    }
    return headers;
  };

  /** One request and its JSON answer; a failure to reach the server is the client's error, as callTool throws it. */
  async function exchange(
    method: string,
    url: string,
    options: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<{ response: Response; body: unknown }> {
    const timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const extra: Record<string, string> = options.body === undefined ? {} : { "Content-Type": "application/json" };
    const init: RequestInit = {
      method,
      headers: await headersFor({ ...extra, ...options.headers }),
      signal,
      redirect: "manual",
    };
    if (options.body !== undefined) {
      init.body = JSON.stringify(options.body);
    }
    let response: Response;
    let text: string;
    try {
      response = await recorded(new Request(url, init));
      if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
        await response.body?.cancel().catch(() => {});
        throw new OxpProtocolError(
          `${method} ${new URL(url).pathname} was answered with a redirect, which the page does not follow`,
          response.status,
        );
      }
      text = await boundedText(response, DEFAULT_MAX_RESPONSE_BYTES);
    } catch (error) {
      if (options.signal?.aborted) {
        throw options.signal.reason;
      }
      if (timeout.aborted) {
        throw new OxpTimeoutError(`No answer within ${timeoutMs} ms`);
      }
      if (error instanceof OxpProtocolError) {
        throw error;
      }
      throw new OxpConnectionError(
        `Could not reach ${base}: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
    const body = parse(text);
    if (!response.ok) {
      throw errorFromResponse(response.status, body, response.headers);
    }
    return { response, body };
  }

  /** A CallStatus about `callId`, or an OxpProtocolError naming what is wrong with the answer. */
  function callStatus(body: unknown, status: number, what: string, callId: string): CallStatus {
    if (!validateCallStatus(body)) {
      throw new OxpProtocolError(`${what} answered a body that is not a CallStatus`, status);
    }
    const answer = body as CallStatus;
    if (answer.call_id !== callId) {
      throw new OxpProtocolError(`${what} answered the status of another call (${answer.call_id})`, status);
    }
    if ((answer.status === "running") !== (answer.result === undefined)) {
      throw new OxpProtocolError(`${what} answered a status whose result does not match it (${answer.status})`, status);
    }
    return answer;
  }

  return {
    async start(request, signal) {
      const callId = request.call_id as string;
      const { response, body } = await exchange("POST", `${base}${TOOLS_CALL_PATH}`, {
        body: request,
        headers: { Prefer: "respond-async" },
        ...(signal ? { signal } : {}),
      });
      if (response.status === 202) {
        return { kind: "accepted", status: callStatus(body, 202, "POST /tools/call", callId) };
      }
      if (response.status !== 200 || !validateCallToolResponse(body)) {
        throw new OxpProtocolError("POST /tools/call answered a body that is not a CallToolResponse", response.status);
      }
      return { kind: "ended", response: body as CallToolResponse };
    },

    async status(callId, options = {}) {
      const wait = options.waitSeconds ?? 0;
      const { response, body } = await exchange("GET", callUrl(TOOLS_CALLS_PATH_TEMPLATE, callId), {
        headers: wait > 0 ? { Prefer: `wait=${wait}` } : {},
        timeoutMs: wait * 1000 + REQUEST_TIMEOUT_MS,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return callStatus(body, response.status, "GET /tools/calls/{call_id}", callId);
    },

    async cancel(callId, signal) {
      const { response, body } = await exchange("DELETE", callUrl(TOOLS_CALLS_PATH_TEMPLATE, callId), {
        ...(signal ? { signal } : {}),
      });
      return callStatus(body, response.status, "DELETE /tools/calls/{call_id}", callId);
    },

    async events(callId, { onProgress, signal }) {
      // Read here, not through the recording fetch: that one reads an answer to its end before handing it on,
      // and this one ends with the call. The history gets the stream's head once it ends.
      const request = new Request(callUrl(TOOLS_CALLS_EVENTS_PATH_TEMPLATE, callId), {
        headers: await headersFor({ Accept: "text/event-stream" }),
        redirect: "manual",
        ...(signal ? { signal } : {}),
      });
      const started = performance.now();
      let response: Response | undefined;
      let kept = "";
      let cut = false;
      const keep = (text: string) => {
        if (kept.length + text.length > HISTORY_BODY_BYTES) {
          kept += text.slice(0, Math.max(0, HISTORY_BODY_BYTES - kept.length));
          cut = true;
        } else {
          kept += text;
        }
      };
      const finish = (outcome: Streamed): Streamed => {
        const note = cut ? `\n... (the history keeps the first ${HISTORY_BODY_BYTES} characters of this stream)` : "";
        record(
          maskedExchange({
            request,
            requestBody: "",
            response,
            responseBody: `${kept}${note}${outcome.kind === "broken" ? `\n(${outcome.reason})` : ""}`,
            durationMs: performance.now() - started,
          }),
        );
        return outcome;
      };
      try {
        response = await fetch(request);
      } catch (error) {
        if (signal?.aborted) {
          finish({ kind: "broken", reason: "the page stopped following the call" });
          throw signal.reason;
        }
        return finish({ kind: "broken", reason: `the stream could not be opened: ${messageOf(error)}` });
      }
      const type = response.headers.get("content-type") ?? "";
      if (response.status !== 200 || !/^text\/event-stream\b/i.test(type) || !response.body) {
        keep(await boundedText(response, HISTORY_BODY_BYTES).catch(() => ""));
        return finish({ kind: "broken", reason: `the stream was answered ${response.status} ${type}` });
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const parser = new EventStreamParser(DEFAULT_MAX_RESPONSE_BYTES);
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            return finish({ kind: "broken", reason: "the stream ended before the call's result" });
          }
          const text = decoder.decode(value, { stream: true });
          keep(text);
          for (const event of parser.push(text)) {
            const data = parse(event.data);
            if (event.event === "progress" && validateCallProgress(data)) {
              onProgress(data as CallProgress);
            } else if (event.event === "result") {
              await reader.cancel().catch(() => {});
              return finish(
                validateCallToolResponse(data)
                  ? { kind: "result", response: data as CallToolResponse }
                  : { kind: "broken", reason: "the result event is not a CallToolResponse" },
              );
            }
            // Anything else (a progress that is not a CallProgress, an event of another type) is skipped.
          }
        }
      } catch (error) {
        await reader.cancel().catch(() => {});
        if (signal?.aborted) {
          finish({ kind: "broken", reason: "the page stopped following the call" });
          throw signal.reason;
        }
        return finish({ kind: "broken", reason: `the stream broke: ${messageOf(error)}` });
      }
    },
  };
}

/** How the page learnt of a running call's progress: its event stream, or long polls of its status. */
export type FollowMode = "events" | "polling";

/**
 * Follows a running call to its end: its event stream first, then (when the stream cannot be opened or breaks:
 * a server bounding streams, a proxy that buffers them) long polls of its status. Resolves with the call's last
 * status; a progress goes to `onProgress` as it comes.
 */
export async function followCall(
  client: TaskClient,
  callId: string,
  options: {
    onProgress: (progress: CallProgress) => void;
    onMode: (mode: FollowMode, why?: string) => void;
    signal: AbortSignal;
  },
): Promise<CallStatus> {
  options.onMode("events");
  const streamed = await client.events(callId, { onProgress: options.onProgress, signal: options.signal });
  if (streamed.kind === "result") {
    // The stream's result does not say whether the call was cancelled: its status does, kept with the result.
    return client.status(callId, { signal: options.signal }).catch(() => ({
      call_id: callId,
      status: "completed" as const,
      result: streamed.response,
    }));
  }
  options.onMode("polling", streamed.reason);
  for (;;) {
    const asked = performance.now();
    const status = await client.status(callId, { waitSeconds: LONG_POLL_SECONDS, signal: options.signal });
    if (status.progress) {
      options.onProgress(status.progress);
    }
    if (status.status !== "running") {
      return status;
    }
    await sleep(MIN_POLL_INTERVAL_MS - (performance.now() - asked), options.signal);
  }
}

/** Waits `ms` (nothing when it is not positive), rejecting with the signal's reason when it aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) {
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
