// A small OXP server with the tasks extension (docs/protocol.md 9.3), and switches that each break one rule: the kit's tasks scenarios must catch every one.
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One deliberate bug, named after what the server does wrong. */
export type TaskBug =
  | "async-before-checks"
  | "location-missing"
  | "location-unencoded"
  | "async-without-header"
  | "wait-ignored"
  | "status-leaks"
  | "cancel-leaks"
  | "long-poll-ignored"
  | "progress-backwards"
  | "events-without-result"
  | "events-resume-ignored"
  | "events-after-result"
  | "cancel-not-stopping"
  | "cancel-retryable"
  | "cancel-ended-changes"
  | "cancel-not-kept"
  | "join-restarts"
  | "unknown-410";

/** How the server is set up. */
export interface TasksServerOptions {
  /** Whether GET /.well-known/oxp lists `tasks` (default true); without it the task paths are 404s. */
  tasks?: boolean;
  bugs?: readonly TaskBug[];
  /** Guards everything but /health and discovery with HS256 JWTs signed with this; each `sub` is a principal. */
  jwtSecret?: string;
}

/** How often Slow.Work reports its progress, in milliseconds. */
export const TICK_MS = 100;

const tool = (id: string, inputSchema: Record<string, unknown>, outputSchema: Record<string, unknown>) => ({
  id,
  name: id.replace(/@.*/, "").replace(".", "_"),
  description: `The tool ${id}.`,
  version: id.replace(/.*@/, ""),
  input_schema: inputSchema,
  output_schema: outputSchema,
});

/** The catalog: a quick sum, and a call that works `ms` milliseconds, reporting its progress as it goes. */
export const CATALOG = [
  tool(
    "Calc.Add@1.0.0",
    {
      type: "object",
      properties: { a: { type: "number", description: "A." }, b: { type: "number", description: "B." } },
      required: ["a", "b"],
      additionalProperties: false,
    },
    { type: "number" },
  ),
  tool(
    "Slow.Work@1.0.0",
    {
      type: "object",
      properties: { ms: { type: "integer", minimum: 0, maximum: 60000, description: "How long to work." } },
      required: ["ms"],
      additionalProperties: false,
    },
    { type: "object", properties: { done_ms: { type: "integer" } }, required: ["done_ms"] },
  ),
];

type Response = { call_id: string; duration: number } & (
  | { success: true; value: unknown }
  | { success: false; error: { message: string; can_retry: boolean } }
);

/** One call_id's record: its progress so far, how it ended, who watches it, and how to stop its run. */
interface CallRecord {
  principal: string;
  callId: string;
  fingerprint: string;
  started: number;
  /** Every progress kept, numbered from 1. */
  history: { progress: number; total: number; message: string }[];
  end?: { response: Response; cancelled: boolean };
  watchers: Set<() => void>;
  stop(): void;
}

/** Which errors the input of each tool has, keyed by property; undefined when it is valid. */
function inputErrors(toolId: string, input: unknown): Record<string, string> | undefined {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return { input: "must be an object" };
  }
  const values = input as Record<string, unknown>;
  const names = toolId.startsWith("Calc.") ? ["a", "b"] : ["ms"];
  const errors: Record<string, string> = {};
  for (const name of names) {
    const value = values[name];
    if (value === undefined) {
      errors[name] = "is required";
    } else if (typeof value !== "number" || (name === "ms" && !(Number.isInteger(value) && value >= 0))) {
      errors[name] = "must be a number";
    }
  }
  for (const name of Object.keys(values).filter((key) => !names.includes(key))) {
    errors[name] = "is not allowed";
  }
  return Object.keys(errors).length > 0 ? errors : undefined;
}

/** The `sub` of an HS256 JWT signed with `secret`, unexpired; undefined for anything else. */
function subjectOf(authorization: string | undefined, secret: string): string | undefined {
  const [head, claims, signature] = (authorization ?? "").replace(/^Bearer /, "").split(".");
  if (!head || !claims || !signature) {
    return undefined;
  }
  const expected = createHmac("sha256", secret).update(`${head}.${claims}`).digest();
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return undefined;
  }
  const payload = JSON.parse(Buffer.from(claims, "base64url").toString("utf8")) as { sub?: unknown; exp?: unknown };
  return typeof payload.sub === "string" && typeof payload.exp === "number" && payload.exp * 1000 > Date.now()
    ? payload.sub
    : undefined;
}

/** `respond-async` and `wait=N` from a Prefer header (several lines arrive as an array). */
function preferences(header: string | string[] | undefined): { respondAsync: boolean; wait: number | undefined } {
  const items = [header ?? ""]
    .flat()
    .join(",")
    .split(",")
    .map((item) => item.trim().toLowerCase());
  const wait = items.find((item) => /^wait=\d+$/.test(item));
  return {
    respondAsync: items.includes("respond-async"),
    wait: wait ? Math.min(30, Number(wait.slice(5))) : undefined,
  };
}

/** Starts the server on 127.0.0.1, port 0. */
export async function startTasksServer(
  options: TasksServerOptions = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const bugs = new Set(options.bugs ?? []);
  const offersTasks = options.tasks ?? true;
  const records = new Map<string, CallRecord>();
  const keyOf = (principal: string, callId: string) => `${principal}\n${callId}`;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res
      .writeHead(status, { "OXP-Version": "1.0", "content-type": "application/json", ...headers })
      .end(JSON.stringify(body));
  const refuse = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) =>
    send(res, status, { message }, headers);

  const notify = (record: CallRecord) => {
    for (const watcher of [...record.watchers]) {
      watcher();
    }
  };
  const end = (record: CallRecord, response: Response, cancelled: boolean) => {
    if (!record.end) {
      record.stop();
      record.end = { response, cancelled };
      notify(record);
    }
  };
  const cancelledResponse = (record: CallRecord): Response => ({
    call_id: record.callId,
    duration: Date.now() - record.started,
    success: false,
    error: { message: "The call was cancelled", can_retry: bugs.has("cancel-retryable") },
  });
  const statusOf = (record: CallRecord) => {
    const latest = record.history.at(-1);
    return {
      call_id: record.callId,
      status: record.end ? (record.end.cancelled ? "cancelled" : "completed") : "running",
      ...(latest ? { progress: latest } : {}),
      ...(record.end ? { result: record.end.response } : {}),
    };
  };
  /** Resolves once the record changes (or has ended), or after `seconds`. */
  const changed = (record: CallRecord, seconds: number) =>
    new Promise<void>((resolve) => {
      if (record.end || seconds <= 0) {
        resolve();
        return;
      }
      const done = () => {
        clearTimeout(timer);
        record.watchers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, seconds * 1000);
      record.watchers.add(done);
    });
  /** Resolves once the record has ended, or after `seconds`. */
  const ended = async (record: CallRecord, seconds: number) => {
    const until = Date.now() + seconds * 1000;
    while (!record.end && Date.now() < until) {
      await changed(record, (until - Date.now()) / 1000);
    }
  };

  /** Runs a call: Calc.Add at once, Slow.Work for `ms`, a progress every tick. */
  const run = (record: CallRecord, toolId: string, input: Record<string, unknown>) => {
    if (toolId.startsWith("Calc.")) {
      end(
        record,
        { call_id: record.callId, duration: 0, success: true, value: Number(input.a) + Number(input.b) },
        false,
      );
      return;
    }
    const ms = Number(input.ms) || 0;
    const ticker = setInterval(() => {
      const elapsed = Date.now() - record.started;
      const progress = bugs.has("progress-backwards") && record.history.length % 2 === 1 ? elapsed / 10 : elapsed;
      record.history.push({ progress, total: ms, message: "Working" });
      notify(record);
    }, TICK_MS);
    const timer = setTimeout(
      () => end(record, { call_id: record.callId, duration: ms, success: true, value: { done_ms: ms } }, false),
      ms,
    );
    record.stop = () => {
      clearInterval(ticker);
      clearTimeout(timer);
    };
  };

  const call = async (req: IncomingMessage, res: ServerResponse, principal: string, text: string) => {
    if (!/^application\/json/i.test(req.headers["content-type"] ?? "")) {
      return refuse(res, 415, "The body must be JSON");
    }
    const version = req.headers["oxp-version"];
    if (version !== undefined && version !== "1.0") {
      return refuse(res, 400, "Unsupported OXP version");
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text);
    } catch {
      return refuse(res, 400, "The body is not JSON");
    }
    const envelope = typeof body.request === "object" && body.request !== null;
    if (envelope) {
      body = body.request as Record<string, unknown>;
    }
    if (Object.keys(body).some((key) => !["tool_id", "input", "call_id", "context", "trace_id"].includes(key))) {
      return refuse(res, 400, "Unknown field in the request");
    }
    const definition = CATALOG.find(
      (entry) => entry.id === body.tool_id || entry.id.replace(/@.*/, "") === body.tool_id,
    );
    if (!definition) {
      return refuse(res, 400, "Unknown tool");
    }
    const asked =
      String(req.headers["oxp-extensions"] ?? "")
        .toLowerCase()
        .includes("tasks") && offersTasks;
    const prefer = preferences(req.headers.prefer);
    const async = prefer.respondAsync && (asked || bugs.has("async-without-header"));
    const input = (body.input ?? {}) as Record<string, unknown>;
    const errors = inputErrors(definition.id, input);
    if (errors && !(async && bugs.has("async-before-checks"))) {
      return send(res, 422, { message: "Invalid input", parameter_errors: errors });
    }
    const callId = typeof body.call_id === "string" ? body.call_id : randomUUID();
    const key = keyOf(principal, callId);
    const fingerprint = JSON.stringify([definition.id, input]);
    let record = records.get(key);
    if (record && record.fingerprint !== fingerprint) {
      return refuse(res, 400, "The call_id was already used for a different call");
    }
    if (
      record &&
      ((!record.end && bugs.has("join-restarts")) || (record.end?.cancelled && bugs.has("cancel-not-kept")))
    ) {
      record.stop();
      record = undefined;
    }
    if (!record) {
      record = {
        principal,
        callId,
        fingerprint,
        started: Date.now(),
        history: [],
        watchers: new Set(),
        stop: () => {},
      };
      records.set(key, record);
      run(record, definition.id, input);
    }
    await ended(record, async ? (bugs.has("wait-ignored") ? 0 : (prefer.wait ?? 0)) : 60);
    if (record.end) {
      const response = record.end.response;
      return send(res, 200, envelope ? { $schema: "urn:oxp:1.0", result: response } : response);
    }
    const headers: Record<string, string> = { "Preference-Applied": "respond-async", "OXP-Extensions": "tasks" };
    if (!bugs.has("location-missing")) {
      const segment = bugs.has("location-unencoded") ? callId : encodeURIComponent(callId);
      headers.Location = `http://${req.headers.host}/tools/calls/${segment}`;
    }
    return send(res, 202, statusOf(record), headers);
  };

  const task = async (req: IncomingMessage, res: ServerResponse, principal: string, below: string) => {
    const [segment = "", tail, ...rest] = below.split("/");
    const callId = decodeURIComponent(segment);
    const mine = records.get(keyOf(principal, callId));
    const anyone = [...records.values()].find((record) => record.callId === callId);
    const leaks = req.method === "GET" ? bugs.has("status-leaks") : bugs.has("cancel-leaks");
    const record = mine ?? (leaks ? anyone : undefined);
    if (rest.length > 0 || (tail !== undefined && tail !== "events")) {
      return refuse(res, 404, "Not found");
    }
    if (!record) {
      return refuse(res, bugs.has("unknown-410") ? 410 : 404, "No such call");
    }
    const applied = { "OXP-Extensions": "tasks" };
    if (tail === "events" && req.method === "GET") {
      return stream(req, res, record);
    }
    if (tail === undefined && req.method === "GET") {
      const wait = preferences(req.headers.prefer).wait;
      if (wait !== undefined && !bugs.has("long-poll-ignored")) {
        await changed(record, wait);
      }
      return send(res, 200, statusOf(record), applied);
    }
    if (tail === undefined && req.method === "DELETE") {
      if (!record.end && bugs.has("cancel-not-stopping")) {
        return send(res, 200, { ...statusOf(record), status: "cancelled", result: cancelledResponse(record) }, applied);
      }
      if (!record.end) {
        end(record, cancelledResponse(record), true);
      } else if (!record.end.cancelled && bugs.has("cancel-ended-changes")) {
        record.end = { response: cancelledResponse(record), cancelled: true };
      }
      return send(res, 200, statusOf(record), applied);
    }
    return refuse(res, 405, "Method not allowed");
  };

  /** The record's events: each progress after Last-Event-ID, then the result, then the end. */
  const stream = (req: IncomingMessage, res: ServerResponse, record: CallRecord) => {
    res.writeHead(200, { "OXP-Version": "1.0", "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write("retry: 1000\n\n");
    const last = String(req.headers["last-event-id"] ?? "");
    if (last === "result" && !bugs.has("events-after-result")) {
      res.end();
      return;
    }
    let sent = /^\d+$/.test(last) && !bugs.has("events-resume-ignored") ? Number(last) : 0;
    const flush = () => {
      for (; sent < record.history.length; sent++) {
        res.write(`id: ${sent + 1}\nevent: progress\ndata: ${JSON.stringify(record.history[sent])}\n\n`);
      }
      if (record.end) {
        record.watchers.delete(flush);
        if (!bugs.has("events-without-result")) {
          res.write(`id: result\nevent: result\ndata: ${JSON.stringify(record.end.response)}\n\n`);
        }
        res.end();
      }
    };
    record.watchers.add(flush);
    res.on("close", () => record.watchers.delete(flush));
    flush();
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname === "/.well-known/oxp") {
        return send(res, 200, { oxp_versions: ["1.0"], extensions: offersTasks ? ["tasks"] : [] });
      }
      if (url.pathname === "/health") {
        return send(res, 200, { status: "healthy" });
      }
      const principal = options.jwtSecret ? subjectOf(req.headers.authorization, options.jwtSecret) : "anonymous";
      if (principal === undefined) {
        return refuse(res, 401, "Unauthorized", { "WWW-Authenticate": "Bearer" });
      }
      if (url.pathname === "/tools" && req.method === "GET") {
        return send(res, 200, { items: CATALOG });
      }
      if (url.pathname === "/tools/call" && req.method === "POST") {
        void call(req, res, principal, Buffer.concat(chunks).toString("utf8"));
        return;
      }
      const asked =
        String(req.headers["oxp-extensions"] ?? "")
          .toLowerCase()
          .includes("tasks") && offersTasks;
      if (url.pathname.startsWith("/tools/calls/") && asked) {
        void task(req, res, principal, url.pathname.slice("/tools/calls/".length));
        return;
      }
      return refuse(res, 404, "Not found");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        for (const record of records.values()) {
          record.stop();
        }
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
