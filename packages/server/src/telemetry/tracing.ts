/** OpenTelemetry traces of an OXP server, through @opentelemetry/api only (given by the caller): one SERVER span per tool call. */
import type { Context, Span, SpanContext, Tracer } from "@opentelemetry/api";
import type { CallEvent, CallOutcome } from "../core/oxp-core.js";
import { parseTraceparent } from "../core/traceparent.js";
import type { Telemetry } from "../http/options.js";

/** A request's headers, names in lower case. */
type RequestHeaders = Readonly<Record<string, string | undefined>>;

/** @opentelemetry/api's module, loaded by `createTelemetry` only when tracing is asked for. */
export type OtelApi = typeof import("@opentelemetry/api");

/** Options of the traces (`createTelemetry({ tracing })`). */
export interface TracingOptions {
  /** The tracer spans are made with. Default: `trace.getTracer("@otc/server")` of the global tracer provider. */
  tracer?: Tracer;
}

/** The instrumentation scope of the default tracer. */
export const TRACER_NAME = "@otc/server";

/** A span's name before (and unless) its tool resolves. */
const SPAN_NAME = "oxp.call";

/** The call's trace id is client-controlled: an attribute holds at most this much of it. */
const TRACE_ID_ATTRIBUTE_MAX = 128;

/**
 * Outcomes that are the server's or the tool's failure. A tool_error is the tool answering as designed
 * (the model is told what went wrong), and 4xx rejections are the client's: neither marks the span.
 */
const FAILED_OUTCOMES: ReadonlySet<CallOutcome> = new Set(["error", "timeout", "invalid_output", "shutdown"]);

/** The `traceparent` header naming a span. */
export function formatTraceparent(spanContext: SpanContext): string {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, "0");
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** The `traceCall` of a telemetry: a SERVER span per call, child of the request's trace context. */
export function createCallTracer(api: OtelApi, options: TracingOptions): NonNullable<Telemetry["traceCall"]> {
  const tracer = options.tracer ?? api.trace.getTracer(TRACER_NAME);

  /** The request's trace context, parsed as W3C Trace Context (for when no global propagator is registered). */
  const remoteSpanContext = (headers: RequestHeaders): SpanContext | undefined => {
    const parsed = parseTraceparent(headers.traceparent);
    if (!parsed) {
      return undefined;
    }
    const { traceId, parentId: spanId, traceFlags } = parsed;
    const spanContext: SpanContext = { traceId, spanId, traceFlags, isRemote: true };
    if (!api.isSpanContextValid(spanContext)) {
      return undefined;
    }
    const state = headers.tracestate;
    if (state) {
      spanContext.traceState = api.createTraceState(state);
    }
    return spanContext;
  };

  /**
   * The parent context: the global propagator's (what the user configured), else the request's W3C
   * `traceparent`/`tracestate` read here, so they are honoured even when the user registered no propagator.
   */
  const parentContext = (headers: RequestHeaders): Context => {
    const extracted = api.propagation.extract(api.ROOT_CONTEXT, headers, api.defaultTextMapGetter);
    const found = api.trace.getSpanContext(extracted);
    if (found && api.isSpanContextValid(found)) {
      return extracted;
    }
    const remote = remoteSpanContext(headers);
    return remote ? api.trace.setSpanContext(extracted, remote) : extracted;
  };

  /** Records how the call ended: ids and outcomes only, never the input, context, secrets or tokens. */
  const annotate = (span: Span, event: CallEvent) => {
    span.setAttribute("oxp.outcome", event.outcome);
    span.setAttribute("http.response.status_code", event.status);
    if (event.toolId !== undefined) {
      span.setAttribute("oxp.tool_id", event.toolId);
      span.updateName(`${SPAN_NAME} ${event.toolId}`);
    }
    if (event.traceId !== undefined) {
      span.setAttribute("oxp.trace_id", event.traceId.slice(0, TRACE_ID_ATTRIBUTE_MAX));
    }
    const failed = FAILED_OUTCOMES.has(event.outcome) || event.status >= 500;
    if (failed) {
      const type = event.status >= 500 ? String(event.status) : event.outcome;
      span.setAttribute("error.type", type);
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: type });
    }
  };

  return async (headers, answerHeaders, run) => {
    const parent = parentContext(headers);
    const parentSpanId = api.trace.getSpanContext(parent)?.spanId;
    const span = tracer.startSpan(
      SPAN_NAME,
      {
        kind: api.SpanKind.SERVER,
        attributes: { "http.request.method": "POST", "http.route": "/tools/call" },
      },
      parent,
    );
    const own = span.spanContext();
    // A no-op tracer hands back the parent's context: only a span of our own is named in the response.
    if (api.isSpanContextValid(own) && own.spanId !== parentSpanId) {
      answerHeaders.traceparent = formatTraceparent(own);
    }
    let ended = false;
    const onEnd = (event: CallEvent) => {
      ended = true;
      annotate(span, event);
    };
    try {
      // Active while the core runs the call, so spans the tool starts nest under it (given a context manager).
      return await api.context.with(api.trace.setSpan(parent, span), run, undefined, onEnd);
    } catch (error) {
      // Not the error's message: it can quote the request.
      if (!ended) {
        span.setStatus({ code: api.SpanStatusCode.ERROR });
      }
      throw error;
    } finally {
      span.end();
    }
  };
}
