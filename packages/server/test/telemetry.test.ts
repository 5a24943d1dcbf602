// Telemetry (createTelemetry) on real servers of the adapter under test: Prometheus metrics scraped from /metrics, trace spans of real calls exported in memory, and the libraries loaded only when asked for.

import { AsyncLocalStorage } from "node:async_hooks";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  type Context,
  type ContextManager,
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { verifies } from "@otc/test-helpers/verifies";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createLogger,
  createTelemetry,
  defineTool,
  listen,
  type OxpTelemetry,
  ServerConfigError,
  TRACER_NAME,
} from "../src/index.js";
import { callTool, makeServer, type Running, send, startServer } from "./harness.js";

const mark = (what: string) => `${what}-${randomBytes(6).toString("hex")}`;

/** One sample line of the Prometheus text format. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseSamples(text: string): Sample[] {
  return text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match?.[1] || !match[3]) {
        throw new Error(`not a sample line: ${line}`);
      }
      const labels = Object.fromEntries(
        [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1], pair[2]]),
      );
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The value of the sample with exactly these labels, or undefined when there is none. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels);
  return samples.find(
    (sample) =>
      sample.name === name &&
      Object.keys(sample.labels).length === wanted.length &&
      wanted.every(([key, value]) => sample.labels[key] === value),
  )?.value;
}

async function scrape(baseUrl: string, headers: Record<string, string> = {}) {
  const reply = await send(`${baseUrl}/metrics`, { headers });
  expect(reply.status, reply.text).toBe(200);
  return { reply, samples: parseSamples(reply.text) };
}

/** A server of the adapter under test with its own tools (startServer's catalog is fixed). */
async function startWithTools(options: Parameters<typeof makeServer>[0]) {
  const running = await listen(makeServer({ logger: false, ...options }), { port: 0 });
  return { baseUrl: running.url, close: running.close };
}

/** A tool that waits at a gate the test opens, and says when it started. */
function gatedTool() {
  let started: () => void = () => {};
  let open: () => void = () => {};
  const startedPromise = new Promise<void>((resolve) => {
    started = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const tool = defineTool({
    toolkit: "Test",
    name: "Gate",
    version: "1.0.0",
    description: "Waits until the test opens its gate.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    outputSchema: null,
    run: async () => {
      started();
      await gate;
    },
  });
  return { tool, started: startedPromise, open };
}

describe("metrics", () => {
  let server: Running;
  let telemetry: OxpTelemetry;

  beforeAll(async () => {
    telemetry = await createTelemetry({ metrics: true, logger: false });
    server = await startServer({ telemetry });
  });
  afterAll(() => server.close());

  it("counts calls by resolved tool id and outcome, replays and challenges, never a requested string", async () => {
    const { baseUrl } = server;
    const unknownTool = `Nope.${mark("Tool").replace(/-/g, "")}`;
    expect((await callTool(baseUrl, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } })).status).toBe(200);
    expect((await callTool(baseUrl, { tool_id: "Calculator.Add@1", input: { a: 3, b: 4 } })).status).toBe(200);
    expect((await callTool(baseUrl, { tool_id: "Calculator.Add", input: { a: "x", b: 1 } })).status).toBe(422);
    const ring = await callTool(baseUrl, { tool_id: "Doorbell.Ring", input: { doorbell_id: "nope" } });
    expect(ring.body).toMatchObject({ success: false });
    const increment = { tool_id: "Counter.Increment", call_id: mark("call"), input: { by: 1 } };
    expect((await callTool(baseUrl, increment)).status).toBe(200);
    expect((await callTool(baseUrl, increment)).status).toBe(200);
    const gmail = await callTool(baseUrl, { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "ada" } });
    expect(gmail.status).toBe(400);
    expect(gmail.body.missing_requirements.authorization[0].url).toBeTruthy();
    expect((await callTool(baseUrl, { tool_id: unknownTool })).status).toBe(400);
    // Answered by the adapter before the core: not calls, not counted.
    const notJson = await send(`${baseUrl}/tools/call`, { method: "POST", headers: { "content-type": "text/plain" } });
    expect(notJson.status).toBe(415);

    const { reply, samples } = await scrape(baseUrl);
    expect(reply.headers.get("content-type")).toBe(telemetry.registry?.contentType);
    expect(reply.headers.get("content-type")).toMatch(/^text\/plain/);
    const calls = (tool_id: string, outcome: string) => sampleValue(samples, "oxp_calls_total", { tool_id, outcome });
    expect(calls("Calculator.Add@1.0.0", "success")).toBe(2);
    expect(calls("Calculator.Add@1.0.0", "rejected")).toBe(1);
    expect(calls("Doorbell.Ring@0.1.0", "tool_error")).toBe(1);
    expect(calls("Counter.Increment@1.0.0", "success")).toBe(1);
    expect(calls("Counter.Increment@1.0.0", "replayed")).toBe(1);
    expect(calls("Gmail.GetEmails@1.2.0", "rejected")).toBe(1);
    expect(calls("unknown", "rejected")).toBe(1);
    const total = samples.filter((sample) => sample.name === "oxp_calls_total").reduce((sum, s) => sum + s.value, 0);
    expect(total).toBe(8);
    expect(sampleValue(samples, "oxp_idempotent_replays_total", { tool_id: "Counter.Increment@1.0.0" })).toBe(1);
    expect(sampleValue(samples, "oxp_authorization_challenges_total", { provider: "google" })).toBe(1);
    expect(sampleValue(samples, "oxp_calls_in_flight")).toBe(0);
    const success = { tool_id: "Calculator.Add@1.0.0", outcome: "success" };
    expect(sampleValue(samples, "oxp_call_duration_seconds_count", success)).toBe(2);
    expect(sampleValue(samples, "oxp_call_duration_seconds_bucket", { ...success, le: "+Inf" })).toBe(2);
    expect(sampleValue(samples, "oxp_call_duration_seconds_bucket", { ...success, le: "60" })).toBe(2);
    expect(sampleValue(samples, "oxp_call_duration_seconds_bucket", { ...success, le: "0.005" })).toBeDefined();
    expect(sampleValue(samples, "oxp_call_duration_seconds_sum", success)).toBeGreaterThanOrEqual(0);
    expect(reply.text).not.toContain(unknownTool);
    expect(reply.text).not.toContain('"Calculator.Add@1"');
    expect(reply.text).not.toContain(gmail.body.missing_requirements.authorization[0].id);
  });

  it("answers HEAD like GET without a body, and other methods 405 with Allow", async () => {
    const head = await send(`${server.baseUrl}/metrics`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect(head.headers.get("content-type")).toMatch(/^text\/plain/);
    const post = await send(`${server.baseUrl}/metrics`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect(post.headers.get("content-type")).toMatch(/^application\/json/);
    expect(post.body).toEqual({ message: expect.any(String) });
    // The query string does not matter; a longer path is not the page.
    expect((await send(`${server.baseUrl}/metrics?debug=1`)).status).toBe(200);
    expect((await send(`${server.baseUrl}/metrics/x`)).status).toBe(404);
  });
});

describe("metrics of a call in flight", () => {
  it("counts it in oxp_calls_in_flight until it ends", async () => {
    const gated = gatedTool();
    const telemetry = await createTelemetry({ metrics: true, logger: false });
    const server = await startWithTools({ tools: [gated.tool], telemetry });
    try {
      const call = callTool(server.baseUrl, { tool_id: "Test.Gate" });
      await gated.started;
      expect(sampleValue((await scrape(server.baseUrl)).samples, "oxp_calls_in_flight")).toBe(1);
      gated.open();
      expect((await call).status).toBe(200);
      const { samples } = await scrape(server.baseUrl);
      expect(sampleValue(samples, "oxp_calls_in_flight")).toBe(0);
      expect(sampleValue(samples, "oxp_calls_total", { tool_id: "Test.Gate@1.0.0", outcome: "success" })).toBe(1);
    } finally {
      gated.open();
      await server.close();
    }
  });
});

describe("the metrics endpoint's own authentication", () => {
  const token = mark("metrics-token");
  const apiKey = mark("api-key");
  let server: Running;
  const lines: string[] = [];

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const telemetry = await createTelemetry({ metrics: { token }, logger: createLogger({ destination }) });
    server = await startServer({ telemetry, auth: { apiKeys: [apiKey] } });
  });
  afterAll(() => server.close());

  it("refuses a scrape without the token, or with a wrong one, with a JSON 401 and logs why", async () => {
    const wrong = mark("wrong-token");
    const attempts: Record<string, string>[] = [{}, { authorization: `Bearer ${wrong}` }, { "oxp-api-key": apiKey }];
    for (const headers of attempts) {
      const reply = await send(`${server.baseUrl}/metrics`, { headers });
      expect(reply.status, reply.text).toBe(401);
      expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
      expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
      expect(reply.body).toMatchObject({ message: expect.any(String) });
      expect(reply.text).not.toContain("oxp_calls_total");
    }
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged.filter((line) => line.msg === "metrics authentication failed")).toHaveLength(3);
    expect(logged.find((line) => line.reason === "wrong metrics token")).toBeDefined();
    expect(lines.join("\n")).not.toContain(wrong);
    expect(lines.join("\n")).not.toContain(apiKey);
  });

  it("serves the metrics with the token, whatever the server's own authentication", async () => {
    const { samples } = await scrape(server.baseUrl, { authorization: `Bearer ${token}` });
    expect(sampleValue(samples, "oxp_calls_in_flight")).toBe(0);
    // The server's own authentication still guards the protocol routes.
    expect((await send(`${server.baseUrl}/tools`)).status).toBe(401);
    expect((await send(`${server.baseUrl}/tools`, { headers: { "oxp-api-key": apiKey } })).status).toBe(200);
  });

  it("checks the token before the method", async () => {
    expect((await send(`${server.baseUrl}/metrics`, { method: "DELETE" })).status).toBe(401);
    const allowed = await send(`${server.baseUrl}/metrics`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(allowed.status).toBe(405);
  });

  it("is open without a token, outside the server's authentication", async () => {
    const telemetry = await createTelemetry({ metrics: true, logger: false });
    const open = await startServer({ telemetry, auth: { apiKeys: [apiKey] } });
    try {
      expect((await send(`${open.baseUrl}/metrics`)).status).toBe(200);
      expect((await send(`${open.baseUrl}/tools`)).status).toBe(401);
    } finally {
      await open.close();
    }
  });
});

describe("metrics options", () => {
  it("takes a registry, a prefix, a path, buckets and the default process metrics", async () => {
    const registry = new Registry();
    const telemetry = await createTelemetry({
      metrics: { registry, prefix: "svc_", path: "/internal/metrics", buckets: [0.5, 1], defaultMetrics: true },
      logger: false,
    });
    expect(telemetry.registry).toBe(registry);
    const server = await startServer({ telemetry });
    try {
      await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { a: 1, b: 1 } });
      expect((await send(`${server.baseUrl}/metrics`)).status).toBe(404);
      const { samples } = await scrape(`${server.baseUrl}/internal`);
      const success = { tool_id: "Calculator.Add@1.0.0", outcome: "success" };
      expect(sampleValue(samples, "svc_calls_total", success)).toBe(1);
      expect(sampleValue(samples, "svc_call_duration_seconds_bucket", { ...success, le: "1" })).toBe(1);
      expect(sampleValue(samples, "svc_call_duration_seconds_bucket", { ...success, le: "2.5" })).toBeUndefined();
      expect(samples.some((sample) => sample.name.startsWith("oxp_"))).toBe(false);
      expect(samples.some((sample) => sample.name === "process_cpu_user_seconds_total")).toBe(true);
      expect(await registry.getSingleMetric("svc_calls_total")?.get()).toMatchObject({ type: "counter" });
    } finally {
      await server.close();
    }
  });

  it("refuses a path on a protocol route and an empty token at creation", async () => {
    await expect(createTelemetry({ metrics: { path: "/tools" } })).rejects.toThrow(ServerConfigError);
    await expect(createTelemetry({ metrics: { path: "metrics" } })).rejects.toThrow(ServerConfigError);
    await expect(createTelemetry({ metrics: { token: "" } })).rejects.toThrow(ServerConfigError);
  });

  it("does nothing when neither metrics nor tracing is asked for", async () => {
    const telemetry = await createTelemetry({ metrics: false });
    expect(telemetry.registry).toBeUndefined();
    expect(telemetry.observer).toBeUndefined();
    expect(telemetry.traceCall).toBeUndefined();
    const server = await startServer({ telemetry });
    try {
      expect((await send(`${server.baseUrl}/metrics`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

/** An AsyncLocalStorage context manager, as a user's SDK would register one (context-async-hooks is not a dependency). */
class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

describe("tracing", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer("test");
  let server: Running;

  /** The spans finished so far, the server's (SERVER kind) only. */
  const serverSpans = async (): Promise<ReadableSpan[]> => {
    await provider.forceFlush();
    return exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.SERVER);
  };
  const onlySpan = async () => {
    const spans = await serverSpans();
    expect(spans).toHaveLength(1);
    return spans[0] as ReadableSpan;
  };

  beforeAll(async () => {
    const telemetry = await createTelemetry({ tracing: { tracer } });
    expect(telemetry.pages).toEqual([]);
    server = await startServer({ telemetry, defaultTimeoutMs: 200 });
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    await server.close();
    await provider.shutdown();
  });

  verifies(
    "trace.traceparent",
    "makes a SERVER span per call, child of the request's traceparent, named in the response",
    async () => {
      const traceId = randomBytes(16).toString("hex");
      const parentId = randomBytes(8).toString("hex");
      const reply = await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", input: { a: 2, b: 3 } },
        { traceparent: `00-${traceId}-${parentId}-01`, tracestate: "vendor=opaque" },
      );
      expect(reply.status).toBe(200);
      const span = await onlySpan();
      expect(span.name).toBe("oxp.call Calculator.Add@1.0.0");
      expect(span.kind).toBe(SpanKind.SERVER);
      expect(span.instrumentationScope.name).toBe("test");
      expect(span.spanContext().traceId).toBe(traceId);
      expect(span.parentSpanContext?.spanId).toBe(parentId);
      expect(span.parentSpanContext?.isRemote).toBe(true);
      expect(span.spanContext().traceState?.get("vendor")).toBe("opaque");
      expect(reply.headers.get("traceparent")).toBe(`00-${traceId}-${span.spanContext().spanId}-01`);
      expect(span.attributes).toMatchObject({
        "oxp.tool_id": "Calculator.Add@1.0.0",
        "oxp.outcome": "success",
        "http.response.status_code": 200,
        "http.request.method": "POST",
        "http.route": "/tools/call",
        // The body has no trace_id: the call's trace id is the traceparent's.
        "oxp.trace_id": traceId,
      });
      expect(span.status.code).toBe(SpanStatusCode.UNSET);
      expect(span.ended).toBe(true);
    },
  );

  it("records the body's trace_id, cut to 128 characters", async () => {
    const traceId = `t-${"x".repeat(200)}`;
    await callTool(server.baseUrl, { tool_id: "Calculator.Add", trace_id: traceId, input: { a: 1, b: 1 } });
    const span = await onlySpan();
    expect(span.attributes["oxp.trace_id"]).toBe(traceId.slice(0, 128));
  });

  it("starts a root span for a request with no valid traceparent, and names it in the response", async () => {
    const headers: Record<string, string>[] = [
      {},
      { traceparent: "00-zzzz-not-valid" },
      { traceparent: `00-${"0".repeat(32)}-${"1".repeat(16)}-01` },
      { traceparent: `ff-${"a".repeat(32)}-${"b".repeat(16)}-01` },
      { traceparent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01-extra` },
    ];
    for (const header of headers) {
      const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { a: 1, b: 1 } }, header);
      const span = await onlySpan();
      exporter.reset();
      expect(span.parentSpanContext, JSON.stringify(header)).toBeUndefined();
      const { traceId, spanId } = span.spanContext();
      expect(reply.headers.get("traceparent")).toBe(`00-${traceId}-${spanId}-01`);
    }
  });

  it("accepts a later traceparent version with more fields", async () => {
    const traceId = randomBytes(16).toString("hex");
    await callTool(
      server.baseUrl,
      { tool_id: "Calculator.Add", input: { a: 1, b: 1 } },
      { traceparent: `01-${traceId}-${"c".repeat(16)}-01-future` },
    );
    expect((await onlySpan()).spanContext().traceId).toBe(traceId);
  });

  it("records rejections with their status, and an unresolved tool as plain oxp.call", async () => {
    const invalid = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { a: "x", b: 1 } });
    expect(invalid.status).toBe(422);
    const rejected = await onlySpan();
    expect(invalid.headers.get("traceparent")).toContain(rejected.spanContext().spanId);
    expect(rejected.name).toBe("oxp.call Calculator.Add@1.0.0");
    expect(rejected.attributes).toMatchObject({ "oxp.outcome": "rejected", "http.response.status_code": 422 });
    // A client's mistake is not the server's error.
    expect(rejected.status.code).toBe(SpanStatusCode.UNSET);
    exporter.reset();

    const requested = `Nope.${mark("Tool").replace(/-/g, "")}`;
    expect((await callTool(server.baseUrl, { tool_id: requested })).status).toBe(400);
    const unknown = await onlySpan();
    expect(unknown.name).toBe("oxp.call");
    expect(unknown.attributes["oxp.tool_id"]).toBeUndefined();
    expect(unknown.attributes["http.response.status_code"]).toBe(400);
    expect(JSON.stringify(unknown.attributes)).not.toContain(requested);
  });

  it("marks tool failures: a tool_error is not an error, a timeout is", async () => {
    await callTool(server.baseUrl, { tool_id: "Doorbell.Ring", input: { doorbell_id: "nope" } });
    const toolError = await onlySpan();
    expect(toolError.attributes["oxp.outcome"]).toBe("tool_error");
    expect(toolError.status.code).toBe(SpanStatusCode.UNSET);
    exporter.reset();

    const slow = await callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 20_000 } });
    expect(slow.body).toMatchObject({ success: false });
    const timeout = await onlySpan();
    expect(timeout.attributes).toMatchObject({ "oxp.outcome": "timeout", "error.type": "timeout" });
    expect(timeout.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe("what a span never holds", () => {
  it("records no input value, secret, token, API key or user id", async () => {
    const secrets = {
      input: mark("input"),
      secret: mark("secret"),
      token: mark("token"),
      apiKey: mark("api-key"),
      userId: mark("user"),
      callId: mark("call"),
      other: mark("other-context"),
    };
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const telemetry = await createTelemetry({ tracing: { tracer: provider.getTracer("test") }, metrics: true });
    const server = await startServer({ telemetry, auth: { apiKeys: [secrets.apiKey] } });
    try {
      const headers = { "oxp-api-key": secrets.apiKey };
      const calls = [
        { tool_id: "Greeting.Hello@2", call_id: secrets.callId, input: { name: secrets.input } },
        {
          tool_id: "SMS.Send",
          input: { to: secrets.input, message: secrets.input },
          context: { secrets: [{ id: "TWILIO_API_KEY", value: secrets.secret }], note: secrets.other },
        },
        {
          tool_id: "Gmail.GetEmails",
          input: { query: secrets.input },
          context: { user_id: secrets.userId, authorization: [{ id: "google", token: secrets.token }] },
        },
        { tool_id: "Calculator.Add", input: { a: secrets.input, b: 1 }, context: { user_id: secrets.userId } },
      ];
      for (const body of calls) {
        await callTool(server.baseUrl, body, headers);
      }
      await send(`${server.baseUrl}/tools/call`, {
        method: "POST",
        headers: { ...headers, authorization: `Bearer ${secrets.token}`, "content-type": "application/json" },
        body: JSON.stringify(calls[0]),
      });
      await provider.forceFlush();
      const spans = exporter.getFinishedSpans();
      expect(spans.map((span) => span.attributes["oxp.outcome"])).toEqual([
        "success",
        "success",
        "success",
        "rejected",
        "replayed",
      ]);
      const recorded = JSON.stringify(
        spans.map((span) => ({
          name: span.name,
          attributes: span.attributes,
          events: span.events,
          links: span.links,
          status: span.status,
          resource: span.resource.attributes,
          traceState: span.spanContext().traceState?.serialize(),
        })),
      );
      const { reply } = await scrape(server.baseUrl);
      for (const [what, value] of Object.entries(secrets)) {
        expect(recorded, what).not.toContain(value);
        expect(reply.text, what).not.toContain(value);
      }
    } finally {
      await server.close();
      await provider.shutdown();
    }
  });
});

describe("tracing with the user's global OpenTelemetry setup", () => {
  afterEach(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it("keeps the server span active while the tool runs, so the tool's spans nest under it", async () => {
    context.setGlobalContextManager(new AsyncLocalContextManager());
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer("test");
    const nested = defineTool({
      toolkit: "Test",
      name: "Nested",
      version: "1.0.0",
      description: "Does its work in a span of its own.",
      inputSchema: { type: "object", properties: {}, additionalProperties: false },
      outputSchema: null,
      run: async () => {
        await new Promise((resolve) => setImmediate(resolve));
        tracer.startActiveSpan("tool work", (span) => span.end());
      },
    });
    const telemetry = await createTelemetry({ tracing: { tracer } });
    const server = await startWithTools({ tools: [nested], telemetry });
    try {
      expect((await callTool(server.baseUrl, { tool_id: "Test.Nested" })).status).toBe(200);
      await provider.forceFlush();
      const spans = exporter.getFinishedSpans();
      const call = spans.find((span) => span.name === "oxp.call Test.Nested@1.0.0");
      const work = spans.find((span) => span.name === "tool work");
      expect(call?.parentSpanContext).toBeUndefined();
      expect(work?.parentSpanContext?.spanId).toBe(call?.spanContext().spanId);
      expect(work?.spanContext().traceId).toBe(call?.spanContext().traceId);
    } finally {
      await server.close();
      await provider.shutdown();
    }
  });

  it("uses the global tracer provider and propagator when given `tracing: true`", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    // A propagator of the user's own format: when one is registered, it decides the parent.
    const custom: TextMapPropagator = {
      inject() {},
      extract(ctx, carrier, getter) {
        const [traceId, spanId] = String(getter.get(carrier, "x-test-trace") ?? "").split(":");
        if (!traceId || !spanId) {
          return ctx;
        }
        return trace.setSpanContext(ctx, { traceId, spanId, traceFlags: 1, isRemote: true });
      },
      fields: () => ["x-test-trace"],
    };
    propagation.setGlobalPropagator(custom);
    const telemetry = await createTelemetry({ tracing: true });
    const server = await startServer({ telemetry });
    try {
      const traceId = randomBytes(16).toString("hex");
      const spanId = randomBytes(8).toString("hex");
      const reply = await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", input: { a: 1, b: 1 } },
        { "x-test-trace": `${traceId}:${spanId}`, traceparent: `00-${"e".repeat(32)}-${"f".repeat(16)}-01` },
      );
      await provider.forceFlush();
      const [span] = exporter.getFinishedSpans();
      expect(span?.instrumentationScope.name).toBe(TRACER_NAME);
      expect(span?.parentSpanContext?.spanId).toBe(spanId);
      expect(reply.headers.get("traceparent")).toBe(`00-${traceId}-${span?.spanContext().spanId}-01`);
      exporter.reset();

      // The registered propagator finds nothing: the request's W3C traceparent is still honoured.
      await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", input: { a: 1, b: 1 } },
        { traceparent: `00-${traceId}-${spanId}-01` },
      );
      await provider.forceFlush();
      const [w3c] = exporter.getFinishedSpans();
      expect(w3c?.parentSpanContext?.spanId).toBe(spanId);
      expect(w3c?.spanContext().traceId).toBe(traceId);
      exporter.reset();

      // The W3C propagator a user would register gives the same parent, tracestate included.
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", input: { a: 1, b: 1 } },
        { traceparent: `00-${traceId}-${spanId}-01`, tracestate: "vendor=w3c" },
      );
      await provider.forceFlush();
      const [registered] = exporter.getFinishedSpans();
      expect(registered?.parentSpanContext?.spanId).toBe(spanId);
      expect(registered?.spanContext().traceState?.get("vendor")).toBe("w3c");
    } finally {
      await server.close();
      await provider.shutdown();
    }
  });

  it("names no span in the response when no tracer provider is registered", async () => {
    const telemetry = await createTelemetry({ tracing: true });
    const server = await startServer({ telemetry });
    try {
      const reply = await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", input: { a: 1, b: 1 } },
        { traceparent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` },
      );
      expect(reply.status).toBe(200);
      expect(reply.headers.get("traceparent")).toBeNull();
    } finally {
      await server.close();
    }
  });
});

describe("cold start", () => {
  const src = fileURLToPath(new URL("../src/", import.meta.url));

  it("has no static import of prom-client or @opentelemetry in the sources", () => {
    const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter(
      (file) => file.endsWith(".ts") && !file.endsWith(".test.ts"),
    );
    expect(files).toContain("telemetry/metrics.ts");
    // `import type` is erased; anything else (even `import { type X }`) loads the module.
    const staticImport =
      /^\s*(?:import\s*|(?:import|export)\s+(?!type\s)[^;]*?\bfrom\s*)["'](?:prom-client|@opentelemetry\/[^"']+)["']/m;
    const offenders = files.filter((file) => staticImport.test(readFileSync(`${src}${file}`, "utf8")));
    expect(offenders).toEqual([]);
    expect(staticImport.test('import { Registry } from "prom-client";')).toBe(true);
    expect(staticImport.test('import "@opentelemetry/api";')).toBe(true);
    expect(staticImport.test('import type { Registry } from "prom-client";')).toBe(false);
    expect(staticImport.test('const prom = await import("prom-client");')).toBe(false);
  });

  it("loads neither library when @otc/server is imported, and both once telemetry is created", async () => {
    // A fresh process (vitest's own may hold them already); tsx runs the TypeScript sources.
    const probe = `
      import { createRequire } from "node:module";
      const cache = createRequire(import.meta.url).cache;
      const loaded = () => [...new Set(Object.keys(cache).flatMap((file) =>
        /node_modules[\\\\/](prom-client|@opentelemetry[\\\\/]api)[\\\\/]/.exec(file)?.[1]?.replace("\\\\", "/") ?? []))].sort();
      const server = await import(${JSON.stringify(`${src}index.ts`)});
      const before = loaded();
      await server.createTelemetry({ metrics: true, tracing: true });
      console.log(JSON.stringify({ before, after: loaded() }));
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", probe],
      { cwd: fileURLToPath(new URL("..", import.meta.url)), env: { ...process.env, LOG_LEVEL: "silent" } },
    );
    expect(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}")).toEqual({
      before: [],
      after: ["@opentelemetry/api", "prom-client"],
    });
  });
});
