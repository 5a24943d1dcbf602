/**
 * Scenarios for docs/protocol.md 9.3, the tasks extension: asynchronous calls, their status, long poll, event stream
 * and cancel. Not applicable where the server's discovery document does not list `tasks`; those that run a call need
 * the fixture's `task` (a tool that runs about a second and reports progress), and are not applicable without it.
 * The bounds (open event streams, asynchronous calls) are left out: a server does not tell its own.
 */
import { randomUUID } from "node:crypto";
import {
  type CallStatus,
  type CallToolResponse,
  parseToolId,
  TOOLS_CALL_PATH,
  TOOLS_CALLS_EVENTS_PATH_TEMPLATE,
  TOOLS_CALLS_PATH_TEMPLATE,
} from "@otc/types";
import { createParser } from "eventsource-parser";
import type { Fixture } from "../fixture.js";
import { type Answer, header } from "../http.js";
import { minimalObject, wrongTypeFor } from "../inputs.js";
import {
  type Context,
  call,
  callOk,
  check,
  checkError,
  checkSchema,
  checkStatus,
  Failure,
  notApplicable,
  type Scenario,
  truncate,
} from "../scenario.js";
import { otherPrincipal } from "./auth.js";
import { probeTool } from "./call.js";
import { appliedBy, canonical, needExtension } from "./extensions.js";

/** Asks for the tasks extension. */
const TASKS = { "OXP-Extensions": "tasks" };
/** Asks for the tasks extension and an asynchronous answer. */
const ASYNC = { ...TASKS, Prefer: "respond-async" };

type Task = NonNullable<Fixture["task"]>;

/** The fixture's long-running call, once the server lists `tasks`; else the scenario is not applicable. */
function needTask(ctx: Context): Task {
  needExtension(ctx, "tasks");
  return ctx.fixture.task ?? notApplicable("the fixture names no long-running call that reports progress (`task`)");
}

/** A call_id of the kit's, unused so far. */
const newCallId = (what: string) => `oxp-conformance-${what}-${randomUUID()}`;

const statusPath = (callId: string) => TOOLS_CALLS_PATH_TEMPLATE.replace("{call_id}", encodeURIComponent(callId));
const eventsPath = (callId: string) =>
  TOOLS_CALLS_EVENTS_PATH_TEMPLATE.replace("{call_id}", encodeURIComponent(callId));

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How a status reads in messages. */
const described = (status: CallStatus) =>
  `${status.status}${status.progress ? ` at ${status.progress.progress}` : ""}${status.result ? ` ${truncate(JSON.stringify(status.result), 120)}` : ""}`;

/** The task's call body under `callId`. */
const taskBody = (task: Task, callId: string) => ({ tool_id: task.tool_id, call_id: callId, input: task.input });

/** `wait=N` seconds long enough for the task to end (1 to 30). */
const waitFor = (task: Task) => Math.min(30, Math.max(1, Math.ceil(task.maxWaitMs / 1000)));

/** Fails unless the answer names `tasks` in `OXP-Extensions`. */
function checkApplied(answer: Answer, what: string): void {
  check(
    appliedBy(answer).includes("tasks"),
    `${what}: OXP-Extensions is ${header(answer, "oxp-extensions") ?? "(none)"}, without tasks`,
  );
}

/** Fails unless the answer is a 200 CallStatus of `callId` naming `tasks`; returns the status. */
function statusFrom(answer: Answer, callId: string, what: string): CallStatus {
  check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
  checkSchema("CallStatus", answer.json, what);
  const status = answer.json as CallStatus;
  check(status.call_id === callId, `${what}: call_id ${status.call_id}, expected ${callId}`);
  checkApplied(answer, what);
  return status;
}

/** GET /tools/calls/{call_id}, checked; `headers` add a `Prefer: wait=N`. */
async function readStatus(
  ctx: Context,
  callId: string,
  options: { headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CallStatus> {
  const what = `GET ${statusPath(callId)}${options.headers?.Prefer ? ` (Prefer: ${options.headers.Prefer})` : ""}`;
  const answer = await ctx.http.send({
    path: statusPath(callId),
    headers: { ...TASKS, ...options.headers },
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
  });
  return statusFrom(answer, callId, what);
}

/** POSTs the task asynchronously under `callId` and checks the 202: a running call's CallStatus. */
async function startTask(ctx: Context, task: Task, callId: string): Promise<CallStatus> {
  const what = `POST ${TOOLS_CALL_PATH} ${task.tool_id} (Prefer: respond-async)`;
  const answer = await call(ctx, taskBody(task, callId), ASYNC);
  check(answer.status === 202, `${what} answered ${answer.status}, not 202: ${truncate(answer.text)}`);
  checkSchema("CallStatus", answer.json, what);
  const status = answer.json as CallStatus;
  check(status.call_id === callId, `${what}: call_id ${status.call_id}, expected ${callId}`);
  check(status.status === "running", `${what}: status ${described(status)} at once, for a call of about a second`);
  return status;
}

/** Cancels a call the scenario started, whatever state it is in; a failure here is not the scenario's. */
async function cancelQuietly(ctx: Context, callId: string, headers?: Record<string, string>): Promise<void> {
  try {
    const request = { method: "DELETE", path: statusPath(callId) };
    await (headers ? ctx.http.raw({ ...request, headers }) : ctx.http.send({ ...request, headers: TASKS }));
  } catch {
    // The server may be gone or refuse: the scenario has its verdict already.
  }
}

/** Reads the status every 100 ms until the call has ended (within the task's `maxWaitMs`); returns every read. */
async function pollUntilEnded(ctx: Context, task: Task, callId: string): Promise<CallStatus[]> {
  const deadline = Date.now() + task.maxWaitMs;
  const seen: CallStatus[] = [];
  for (;;) {
    const status = await readStatus(ctx, callId);
    seen.push(status);
    if (status.status !== "running") {
      return seen;
    }
    check(Date.now() < deadline, `${task.tool_id} is still running ${task.maxWaitMs} ms after it started`);
    await delay(100);
  }
}

/** Fails unless a call's result is the fixture's success: the call_id, success, and the value when the fixture knows it. */
function checkTaskResult(result: CallToolResponse | undefined, task: Task, callId: string, what: string): void {
  check(result !== undefined, `${what} has no result`);
  check(result.call_id === callId, `${what}: the result's call_id is ${result.call_id}, expected ${callId}`);
  check(result.success, `${what}: the call failed: ${truncate(JSON.stringify(result))}`);
  check(
    task.value === undefined || canonical(result.value) === canonical(task.value),
    `${what}: value ${truncate(JSON.stringify(result.value))}, expected ${JSON.stringify(task.value)}`,
  );
}

/** One server-sent event: its id, type and data as sent. */
export interface StreamEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * The events of a `text/event-stream` body, in order (eventsource-parser): complete blocks only (a block ends with
 * a blank line), comment lines and blocks without data (the `retry:` line) left out; an event without `event:` is a
 * `message`. The body is whole: a `\r` that ends it ends its line.
 */
export function parseEventStream(text: string): StreamEvent[] {
  const events: StreamEvent[] = [];
  const parser = createParser({
    onEvent: ({ id, event, data }) => events.push({ id, event: event ?? "message", data }),
  });
  parser.feed(text.endsWith("\r") ? `${text}\n` : text);
  return events;
}

/**
 * An `until` that stops reading at the stream's first event with data. Each piece is parsed once, as it comes
 * (eventsource-parser), so a stream that never ends its first line costs the kit its length, not its length
 * times its pieces.
 */
function untilFirstEvent(): (piece: string) => boolean {
  let seen = false;
  const parser = createParser({
    onEvent: () => {
      seen = true;
    },
  });
  return (piece) => {
    parser.feed(piece);
    return seen;
  };
}

/** An event's data as JSON, or a failure naming the event. */
function eventData(event: StreamEvent, what: string): unknown {
  try {
    return JSON.parse(event.data);
  } catch {
    throw new Failure(
      `${what}: the ${event.event} event ${event.id ?? ""} has data that is not JSON: ${truncate(event.data)}`,
    );
  }
}

/**
 * Checks a whole event stream of `callId`: a 200 `text/event-stream` of `progress` events (numbered ids, increasing,
 * each a CallProgress whose `progress` increases) and then exactly one `result` event (id `result`, a
 * CallToolResponse of the call), after which it ended. Returns the progress events and the result.
 */
function checkStream(
  answer: Answer,
  callId: string,
  what: string,
): { progress: { id: number; progress: number }[]; result: CallToolResponse } {
  checkStatus(answer, 200);
  check(
    /^text\/event-stream/i.test(header(answer, "content-type") ?? ""),
    `${what} is not text/event-stream: ${header(answer, "content-type") ?? "(no content type)"}`,
  );
  const events = parseEventStream(answer.text);
  const progress: { id: number; progress: number }[] = [];
  let result: CallToolResponse | undefined;
  for (const event of events) {
    check(result === undefined, `${what}: a ${event.event} event follows the result event`);
    if (event.event === "progress") {
      check(/^[0-9]+$/.test(event.id ?? ""), `${what}: a progress event's id is ${event.id ?? "(none)"}, not a number`);
      const id = Number(event.id);
      const data = eventData(event, what);
      checkSchema("CallProgress", data, `${what}, progress event ${id}`);
      const value = (data as { progress: number }).progress;
      const last = progress.at(-1);
      check(last === undefined || id > last.id, `${what}: progress event ${id} follows event ${last?.id}`);
      check(
        last === undefined || value > last.progress,
        `${what}: progress ${value} (event ${id}) does not increase on ${last?.progress} (event ${last?.id})`,
      );
      progress.push({ id, progress: value });
    } else if (event.event === "result") {
      check(event.id === "result", `${what}: the result event's id is ${event.id ?? "(none)"}, not result`);
      const data = eventData(event, what);
      checkSchema("CallToolResponse", data, `${what}, result event`);
      result = data as CallToolResponse;
      check(result.call_id === callId, `${what}: the result's call_id is ${result.call_id}, expected ${callId}`);
    } else {
      throw new Failure(`${what}: an event of type ${truncate(event.event)}, neither progress nor result`);
    }
  }
  check(result !== undefined, `${what} ended without a result event: ${truncate(answer.text, 300)}`);
  return { progress, result };
}

/** GET /tools/calls/{call_id}/events to its end, within the task's time. */
const readEvents = (ctx: Context, task: Task, callId: string, headers: Record<string, string> = {}) =>
  ctx.http.send({ path: eventsPath(callId), headers: { ...TASKS, ...headers }, timeoutMs: task.maxWaitMs });

/** The same input with its first number changed: another call under the same call_id; undefined without a number. */
function otherInput(input: Record<string, unknown>): Record<string, unknown> | undefined {
  const key = Object.keys(input).find((name) => typeof input[name] === "number");
  return key === undefined ? undefined : { ...input, [key]: (input[key] as number) + 1 };
}

/** Two 404 bodies read the same when the ids they were asked about are taken out. */
const sameNotFound = (a: Answer, aId: string, b: Answer, bId: string) =>
  a.text.replaceAll(aId, "{call_id}").replaceAll(encodeURIComponent(aId), "{call_id}") ===
  b.text.replaceAll(bId, "{call_id}").replaceAll(encodeURIComponent(bId), "{call_id}");

export const taskScenarios: Scenario[] = [
  {
    id: "tasks.respond-async",
    section: "9.3",
    rules: ["tasks.respond-async", "extensions.applied-header"],
    level: "project",
    title:
      "Prefer: respond-async answers 202: the CallStatus, Location naming the call, Preference-Applied and OXP-Extensions",
    async run(ctx) {
      const task = needTask(ctx);
      // A space and a slash: Location must carry the call_id as one path segment.
      const callId = `oxp-conformance async/${randomUUID()}`;
      const made: string[] = [];
      try {
        const what = `POST ${TOOLS_CALL_PATH} ${task.tool_id} (Prefer: respond-async)`;
        for (const sent of [callId, undefined]) {
          const answer = await call(
            ctx,
            { tool_id: task.tool_id, input: task.input, ...(sent === undefined ? {} : { call_id: sent }) },
            ASYNC,
          );
          const label = sent === undefined ? `${what}, without a call_id,` : what;
          check(answer.status === 202, `${label} answered ${answer.status}, not 202: ${truncate(answer.text)}`);
          checkSchema("CallStatus", answer.json, label);
          const status = answer.json as CallStatus;
          made.push(status.call_id);
          check(sent === undefined || status.call_id === sent, `${label}: call_id ${status.call_id}, expected ${sent}`);
          check(status.status === "running", `${label}: status ${described(status)}, for a call of about a second`);
          check(
            /(^|,)\s*respond-async\s*(,|;|$)/i.test(header(answer, "preference-applied") ?? ""),
            `${label}: Preference-Applied is ${header(answer, "preference-applied") ?? "(none)"}, not respond-async`,
          );
          checkApplied(answer, label);
          const location = header(answer, "location") ?? "";
          let url: URL;
          try {
            url = new URL(location);
          } catch {
            throw new Failure(`${label}: Location ${truncate(location) || "(none)"} is not an absolute URL`);
          }
          const prefix = TOOLS_CALLS_PATH_TEMPLATE.replace("{call_id}", "");
          const segment = url.pathname.slice(url.pathname.lastIndexOf(prefix) + prefix.length);
          let named: string | undefined;
          try {
            named = url.pathname.includes(prefix) && !segment.includes("/") ? decodeURIComponent(segment) : undefined;
          } catch {
            named = undefined;
          }
          check(
            named === status.call_id,
            `${label}: Location ${location} does not name ${prefix}{call_id} for ${JSON.stringify(status.call_id)}`,
          );
          // Behind a proxy Location names the public address, which the kit may not reach: followed when it is ours.
          if (url.origin === ctx.http.origin) {
            const followed = await ctx.http.send({ url: url.href, headers: TASKS });
            statusFrom(followed, status.call_id, `GET ${location}`);
          }
        }
      } finally {
        for (const id of made) {
          await cancelQuietly(ctx, id);
        }
      }
    },
  },
  {
    id: "tasks.respond-async.checks",
    section: "9.3",
    rules: ["tasks.respond-async", "call.order-of-checks", "call.input-422", "call.body-checks"],
    level: "project",
    title: "Asked to respond asynchronously, a call that fails its checks gets the 400, 401, 415 or 422, never a 202",
    async run(ctx) {
      needExtension(ctx, "tasks");
      const task = ctx.fixture.task;
      const named =
        task &&
        ctx.tools.find((tool) => tool.id === task.tool_id || parseToolId(tool.id)?.qualifiedName === task.tool_id);
      const tool = named && wrongTypeFor(named.input_schema as Record<string, unknown>) ? named : probeTool(ctx);
      const schema = tool.input_schema as Record<string, unknown>;
      const valid = tool === named && task ? task.input : (minimalObject(schema) ?? {});
      const wrong = wrongTypeFor(schema) as { name: string; value: unknown };
      const parsed = parseToolId(tool.id);
      const cases: [string, unknown, Record<string, string>, number][] = [
        [
          `${wrong.name} of the wrong type`,
          { tool_id: tool.id, input: { ...valid, [wrong.name]: wrong.value } },
          {},
          422,
        ],
        ["its required input missing", { tool_id: tool.id, input: {} }, {}, 422],
        ["an unknown tool", { tool_id: "OxpConformance.NoSuchTool", input: valid }, {}, 400],
        ["an unknown version", { tool_id: `${parsed?.qualifiedName ?? tool.id}@987654.0.0`, input: valid }, {}, 400],
        ["an unknown field", { tool_id: tool.id, input: valid, oxp_conformance: true }, {}, 400],
        ["malformed JSON", "{", {}, 400],
        ["an unsupported OXP-Version", { tool_id: tool.id, input: valid }, { "OXP-Version": "987.0" }, 400],
        [
          "a text/plain body",
          JSON.stringify({ tool_id: tool.id, input: valid }),
          { "content-type": "text/plain" },
          415,
        ],
      ];
      for (const [what, body, headers, status] of cases) {
        const answer = await call(ctx, body, { ...ASYNC, ...headers });
        check(
          answer.status === status,
          `a call with ${what}, asked to respond asynchronously, answered ${answer.status}, not ${status}: ${truncate(answer.text)}`,
        );
        checkError(answer, status);
      }
      if (ctx.auth.apiKey !== undefined || ctx.auth.jwtSecret !== undefined) {
        const answer = await ctx.http.raw({
          method: "POST",
          path: TOOLS_CALL_PATH,
          headers: { "content-type": "application/json", ...ASYNC },
          body: { tool_id: tool.id, input: valid },
        });
        check(
          answer.status === 401,
          `a call without credentials, asked to respond asynchronously, answered ${answer.status}`,
        );
        checkError(answer, 401);
      }
    },
  },
  {
    id: "tasks.respond-async.wait",
    section: "9.3",
    rules: ["tasks.respond-async", "envelope.answer-in-kind"],
    level: "project",
    title: "A call that ends within Prefer: wait=N is answered 200 with its CallToolResponse, in the envelope for one",
    async run(ctx) {
      const task = needTask(ctx);
      const seconds = waitFor(task);
      const callId = newCallId("wait");
      try {
        const what = `POST ${TOOLS_CALL_PATH} ${task.tool_id} (Prefer: respond-async, wait=${seconds})`;
        const answer = await call(ctx, taskBody(task, callId), { ...ASYNC, Prefer: `respond-async, wait=${seconds}` });
        check(
          answer.status === 200,
          `${what} answered ${answer.status}, though the call ends within the wait: ${truncate(answer.text)}`,
        );
        checkSchema("CallToolResponse", answer.json, what);
        checkTaskResult(answer.json as CallToolResponse, task, callId, what);
        const safe = ctx.fixture.safeCall;
        if (safe) {
          const envelope = await call(
            ctx,
            { $schema: "urn:oxp:1.0", request: { tool_id: safe.tool_id, input: safe.input } },
            { ...ASYNC, Prefer: "respond-async, wait=5" },
          );
          const label = `an envelope of ${safe.tool_id} (Prefer: respond-async, wait=5)`;
          check(envelope.status === 200, `${label} answered ${envelope.status}: ${truncate(envelope.text)}`);
          checkSchema("CallToolResultEnvelope", envelope.json, label);
          const value = (envelope.json as { result: { value?: unknown } }).result.value;
          check(canonical(value) === canonical(safe.value), `${label}: value ${truncate(JSON.stringify(value))}`);
        }
      } finally {
        await cancelQuietly(ctx, callId);
      }
    },
  },
  {
    id: "tasks.respond-async.off",
    section: "9.3",
    rules: ["extensions.off-without-header", "tasks.respond-async"],
    level: "project",
    title: "Without OXP-Extensions: tasks, Prefer: respond-async is ignored: the call is answered in its request",
    async run(ctx) {
      const task = needTask(ctx);
      const what = `POST ${TOOLS_CALL_PATH} ${task.tool_id} (Prefer: respond-async, no OXP-Extensions)`;
      const answer = await ctx.http.send({
        method: "POST",
        path: TOOLS_CALL_PATH,
        headers: { "content-type": "application/json", Prefer: "respond-async" },
        body: { tool_id: task.tool_id, input: task.input },
        timeoutMs: task.maxWaitMs,
      });
      check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
      // Its value, or a time limit's failure: the call's own time limit is the server's.
      checkSchema("CallToolResponse", answer.json, what);
      for (const name of ["preference-applied", "oxp-extensions", "location"]) {
        check(header(answer, name) === undefined, `${what} answered ${name}: ${header(answer, name)}`);
      }
    },
  },
  {
    id: "tasks.status",
    section: "9.3",
    rules: ["tasks.status", "tasks.progress"],
    level: "project",
    title: "GET /tools/calls/{call_id} reads running with increasing progress, then completed with the result",
    async run(ctx) {
      const task = needTask(ctx);
      const callId = newCallId("status");
      try {
        await startTask(ctx, task, callId);
        const seen = await pollUntilEnded(ctx, task, callId);
        let last: number | undefined;
        for (const status of seen) {
          const now = status.progress?.progress;
          // An ended call's status may leave its progress out; a running one's keeps what it had.
          check(
            last === undefined || (now === undefined ? status.status !== "running" : now >= last),
            `the progress read went from ${last} to ${now ?? "(none)"}: it only increases over a call's life`,
          );
          last = now ?? last;
        }
        check(
          seen.some((status) => status.status === "running" && status.progress !== undefined),
          `no status of the running call carried progress (${seen.length} read), though its tool reports progress`,
        );
        const ended = seen.at(-1) as CallStatus;
        check(ended.status === "completed", `the call ended ${described(ended)}, expected completed`);
        checkTaskResult(ended.result, task, callId, `GET ${statusPath(callId)}`);
        const again = await readStatus(ctx, callId);
        check(
          again.status === "completed" && canonical(again.result) === canonical(ended.result),
          `read again, the ended call is ${described(again)}`,
        );
      } finally {
        await cancelQuietly(ctx, callId);
      }
    },
  },
  {
    id: "tasks.long-poll",
    section: "9.3",
    rules: ["tasks.long-poll"],
    level: "project",
    title: "With Prefer: wait=N, a status request about a running call is answered on its next change",
    async run(ctx) {
      const task = needTask(ctx);
      const callId = newCallId("long-poll");
      const held = { headers: { Prefer: "wait=10" }, timeoutMs: 15_000 };
      try {
        await startTask(ctx, task, callId);
        let view = await readStatus(ctx, callId);
        for (let round = 1; round <= 3 && view.status === "running"; round++) {
          const began = Date.now();
          const next = await readStatus(ctx, callId, held);
          const took = Date.now() - began;
          const newer = next.status !== "running" || (next.progress?.progress ?? -1) > (view.progress?.progress ?? -1);
          check(
            newer,
            `a long poll (Prefer: wait=10) answered after ${took} ms with nothing new: ${described(view)}, then ${described(next)}`,
          );
          check(
            took < 5_000,
            `a long poll (Prefer: wait=10) answered after ${took} ms, though the tool reports progress several times a second`,
          );
          view = next;
        }
        const ended = (await pollUntilEnded(ctx, task, callId)).at(-1) as CallStatus;
        const began = Date.now();
        const after = await readStatus(ctx, callId, held);
        check(Date.now() - began < 3_000, `a long poll on an ended call waited ${Date.now() - began} ms`);
        check(
          canonical(after.result) === canonical(ended.result),
          `a long poll on the ended call read ${described(after)}`,
        );
      } finally {
        await cancelQuietly(ctx, callId);
      }
    },
  },
  {
    id: "tasks.events",
    section: "9.3",
    rules: ["tasks.events", "tasks.progress"],
    level: "project",
    title: "GET /tools/calls/{call_id}/events streams increasing progress events, then one result event, then ends",
    async run(ctx) {
      const task = needTask(ctx);
      const callId = newCallId("events");
      try {
        await startTask(ctx, task, callId);
        const what = `GET ${eventsPath(callId)}`;
        const { progress, result } = checkStream(await readEvents(ctx, task, callId), callId, what);
        check(progress.length > 0, `${what} sent no progress event, though the tool reports progress`);
        checkTaskResult(result, task, callId, `${what}, result event`);
        const status = await readStatus(ctx, callId);
        check(
          status.status === "completed" && canonical(status.result) === canonical(result),
          `after the result event, the status is ${described(status)}`,
        );
      } finally {
        await cancelQuietly(ctx, callId);
      }
    },
  },
  {
    id: "tasks.events.resume",
    section: "9.3",
    rules: ["tasks.events"],
    level: "project",
    title: "With Last-Event-ID the event stream resumes after that event; after the result, nothing follows",
    async run(ctx) {
      const task = needTask(ctx);
      const callId = newCallId("resume");
      try {
        await startTask(ctx, task, callId);
        const what = `GET ${eventsPath(callId)}`;
        const first = await ctx.http.send({
          path: eventsPath(callId),
          headers: TASKS,
          timeoutMs: task.maxWaitMs,
          until: untilFirstEvent(),
        });
        checkStatus(first, 200);
        const [opening] = parseEventStream(first.text);
        check(
          opening?.event === "progress",
          `${what} opened with ${opening?.event ?? "nothing"}, not a progress event`,
        );
        check(/^[0-9]+$/.test(opening.id ?? ""), `${what}: the progress event's id is ${opening.id ?? "(none)"}`);
        const seen = Number(opening.id);
        const label = `${what} with Last-Event-ID: ${seen}`;
        const resumed = checkStream(
          await readEvents(ctx, task, callId, { "Last-Event-ID": String(seen) }),
          callId,
          label,
        );
        const replayed = resumed.progress.filter((event) => event.id <= seen);
        check(
          replayed.length === 0,
          `${label} sent progress event ${replayed.map((event) => event.id).join(", ")} again`,
        );
        checkTaskResult(resumed.result, task, callId, `${label}, result event`);
        const after = await readEvents(ctx, task, callId, { "Last-Event-ID": "result" });
        checkStatus(after, 200);
        const extra = parseEventStream(after.text);
        check(
          extra.length === 0,
          `${what} with Last-Event-ID: result sent ${extra.map((event) => event.event).join(", ")}: nothing follows the result`,
        );
      } finally {
        await cancelQuietly(ctx, callId);
      }
    },
  },
  {
    id: "tasks.cancel",
    section: "9.3",
    rules: ["tasks.cancel", "tasks.one-record"],
    level: "project",
    title:
      "DELETE cancels a running call for good: cancelled, can_retry false, its progress stopped, its call_id replayed as cancelled",
    async run(ctx) {
      const task = needTask(ctx);
      const callId = newCallId("cancel");
      try {
        await startTask(ctx, task, callId);
        const what = `DELETE ${statusPath(callId)}`;
        const cancelled = statusFrom(
          await ctx.http.send({ method: "DELETE", path: statusPath(callId), headers: TASKS }),
          callId,
          what,
        );
        check(cancelled.status === "cancelled", `${what} left the call ${described(cancelled)}, expected cancelled`);
        const result = cancelled.result as CallToolResponse;
        check(
          !result.success && result.error.can_retry === false && /cancel/i.test(result.error.message),
          `${what}: the result is ${truncate(JSON.stringify(result))}, not a failure saying it was cancelled with can_retry false`,
        );
        // A run that goes on after its cancel shows: its progress or its status moves on.
        await delay(500);
        const later = await readStatus(ctx, callId);
        check(
          later.status === "cancelled" && canonical(later.result) === canonical(result),
          `half a second after the cancel the call is ${described(later)}`,
        );
        check(
          (later.progress?.progress ?? 0) <= (cancelled.progress?.progress ?? 0),
          `the progress moved on after the cancel: ${cancelled.progress?.progress ?? "(none)"}, then ${later.progress?.progress}`,
        );
        const events = checkStream(await readEvents(ctx, task, callId), callId, `GET ${eventsPath(callId)}`);
        check(
          canonical(events.result) === canonical(result),
          `the cancelled call's result event is ${truncate(JSON.stringify(events.result))}`,
        );
        for (const [label, headers] of [
          ["asynchronously", ASYNC],
          ["in its request", {}],
        ] as const) {
          const replay = await call(ctx, taskBody(task, callId), headers);
          const asked = `a repeat of the cancelled call ${label}`;
          check(
            replay.status === 200,
            `${asked} answered ${replay.status}, not its kept response: ${truncate(replay.text)}`,
          );
          checkSchema("CallToolResponse", replay.json, asked);
          check(canonical(replay.json) === canonical(result), `${asked} answered ${truncate(replay.text)}`);
        }
        const again = statusFrom(
          await ctx.http.send({ method: "DELETE", path: statusPath(callId), headers: TASKS }),
          callId,
          `${what}, again`,
        );
        check(
          again.status === "cancelled" && canonical(again.result) === canonical(result),
          `a second DELETE left the call ${described(again)}`,
        );
      } finally {
        await cancelQuietly(ctx, callId);
      }
    },
  },
  {
    id: "tasks.cancel.ended",
    section: "9.3",
    rules: ["tasks.cancel", "tasks.one-record"],
    level: "project",
    title: "DELETE on a call that has ended changes nothing: 200 with its completed status and kept response",
    async run(ctx) {
      needExtension(ctx, "tasks");
      const safe = ctx.fixture.safeCall ?? notApplicable("the fixture names no safe call");
      const callId = newCallId("ended");
      const response = await callOk(ctx, { tool_id: safe.tool_id, call_id: callId, input: safe.input });
      const what = `DELETE ${statusPath(callId)} of a call answered in its request`;
      const status = statusFrom(
        await ctx.http.send({ method: "DELETE", path: statusPath(callId), headers: TASKS }),
        callId,
        what,
      );
      check(
        status.status === "completed" && canonical(status.result) === canonical(response),
        `${what} answered ${described(status)}, expected completed with ${truncate(JSON.stringify(response))}`,
      );
      const read = await readStatus(ctx, callId);
      check(canonical(read) === canonical(status), `after the DELETE the call reads ${described(read)}`);
    },
  },
  {
    id: "tasks.one-record",
    section: "9.3",
    rules: ["tasks.one-record", "idempotency.concurrent-duplicate-waits", "idempotency.mismatch-400", "tasks.progress"],
    level: "project",
    title:
      "A task is its call_id record: a repeated POST joins the run (its progress goes on), then gets the kept response",
    async run(ctx) {
      const task = needTask(ctx);
      const callId = newCallId("one-record");
      try {
        await startTask(ctx, task, callId);
        const deadline = Date.now() + task.maxWaitMs;
        let before = await readStatus(ctx, callId);
        while (before.status === "running" && before.progress === undefined && Date.now() < deadline) {
          await delay(50);
          before = await readStatus(ctx, callId);
        }
        check(before.progress !== undefined, `the call reported no progress: ${described(before)}`);
        const from = before.progress.progress;
        const what = `a repeated POST with the running call's call_id (Prefer: respond-async)`;
        const repeat = await call(ctx, taskBody(task, callId), ASYNC);
        check(repeat.status === 202, `${what} answered ${repeat.status}, not 202: ${truncate(repeat.text)}`);
        checkSchema("CallStatus", repeat.json, what);
        const joined = repeat.json as CallStatus;
        check(
          joined.call_id === callId && (joined.progress?.progress ?? -1) >= from,
          `${what} answered ${described(joined)}, after progress ${from}: the run started again`,
        );
        const now = await readStatus(ctx, callId);
        check(
          now.status !== "running" || (now.progress?.progress ?? -1) >= from,
          `after ${what} the call reads ${described(now)}, after progress ${from}: the run started again`,
        );
        const seconds = waitFor(task);
        const waited = await call(ctx, taskBody(task, callId), { ...ASYNC, Prefer: `respond-async, wait=${seconds}` });
        const label = `a repeated POST (Prefer: respond-async, wait=${seconds})`;
        check(waited.status === 200, `${label} answered ${waited.status}: ${truncate(waited.text)}`);
        checkSchema("CallToolResponse", waited.json, label);
        checkTaskResult(waited.json as CallToolResponse, task, callId, label);
        const ended = await readStatus(ctx, callId);
        check(
          ended.status === "completed" && canonical(ended.result) === canonical(waited.json),
          `the joined call reads ${described(ended)}, not the response its repeat got`,
        );
        const replay = await callOk(ctx, taskBody(task, callId));
        check(
          canonical(replay) === canonical(waited.json),
          `a repeat in its request answered ${truncate(JSON.stringify(replay))}`,
        );
        const other = otherInput(task.input);
        if (other) {
          const mismatch = await call(ctx, { ...taskBody(task, callId), input: other }, ASYNC);
          check(mismatch.status === 400, `the call_id with another input answered ${mismatch.status}, not 400`);
          checkError(mismatch, 400);
        }
      } finally {
        await cancelQuietly(ctx, callId);
      }
    },
  },
  {
    id: "tasks.principals",
    section: "9.3",
    rules: ["tasks.status", "tasks.cancel", "idempotency.per-principal", "auth.principal-identity"],
    level: "project",
    title: "Another principal cannot read, follow or cancel a call (404 as for none), and its call_id is its own",
    async run(ctx) {
      const task = needTask(ctx);
      const other =
        (await otherPrincipal(ctx)) ??
        notApplicable(
          ctx.auth.apiKey !== undefined
            ? "the kit has one API key, one principal (give --jwt-secret too for a second)"
            : "authentication is off: every client is the one principal 'anonymous'",
        );
      const theirs = { ...other, ...TASKS };
      const callId = newCallId("principal");
      const never = newCallId("never");
      let started = false;
      try {
        await startTask(ctx, task, callId);
        for (const [method, path] of [
          ["GET", statusPath],
          ["GET", eventsPath],
          ["DELETE", statusPath],
        ] as const) {
          const what = `another principal's ${method} ${path(callId)}`;
          const answer = await ctx.http.raw({ method, path: path(callId), headers: theirs });
          check(answer.status === 404, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
          checkError(answer, 404);
          const unknown = await ctx.http.raw({ method, path: path(never), headers: theirs });
          check(
            unknown.status === 404 && sameNotFound(answer, callId, unknown, never),
            `${what} answered otherwise than for a call that never was: ${truncate(answer.text)}, then ${truncate(unknown.text)}`,
          );
        }
        const mine = await readStatus(ctx, callId);
        check(mine.status === "running", `after another principal's DELETE the call is ${described(mine)}`);
        const what = "another principal's POST with the same call_id (Prefer: respond-async)";
        const own = await ctx.http.raw({
          method: "POST",
          path: TOOLS_CALL_PATH,
          headers: { "content-type": "application/json", ...other, ...ASYNC },
          body: taskBody(task, callId),
        });
        started = own.status === 202;
        check(
          own.status === 202,
          `${what} answered ${own.status}, not 202 for a call of its own: ${truncate(own.text)}`,
        );
        checkSchema("CallStatus", own.json, what);
        check((own.json as CallStatus).status === "running", `${what} answered ${truncate(own.text)}`);
        const cancelled = await ctx.http.raw({ method: "DELETE", path: statusPath(callId), headers: theirs });
        check(cancelled.status === 200, `another principal's DELETE of its own call answered ${cancelled.status}`);
        const still = await readStatus(ctx, callId);
        check(
          still.status === "running",
          `another principal's cancel of its own call left this one ${described(still)}`,
        );
      } finally {
        await cancelQuietly(ctx, callId);
        if (started) {
          await cancelQuietly(ctx, callId, theirs);
        }
      }
    },
  },
  {
    id: "tasks.unknown",
    section: "9.3",
    rules: ["tasks.status", "tasks.events", "tasks.cancel"],
    level: "project",
    title: "An unknown call_id is a 404 JSON error: its status, its events and its cancel",
    async run(ctx) {
      needExtension(ctx, "tasks");
      const callId = newCallId("unknown");
      for (const [method, path] of [
        ["GET", statusPath(callId)],
        ["GET", eventsPath(callId)],
        ["DELETE", statusPath(callId)],
      ] as const) {
        const answer = await ctx.http.send({ method, path, headers: TASKS });
        check(answer.status === 404, `${method} ${path} answered ${answer.status}: ${truncate(answer.text)}`);
        checkError(answer, 404);
      }
    },
  },
];
