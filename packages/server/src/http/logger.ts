/** Structured JSON logs (pino) with every place a credential could sit redacted. */
import { type DestinationStream, type Logger, pino } from "pino";
import type { CallLineSink, CallLogLine } from "../core/call-log.js";
import { REDACTED, REDACTED_PATHS } from "../core/console-logger.js";

export { REDACTED_PATHS };

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** pino level; default `LOG_LEVEL` from the environment, else `info`. */
  level?: string;
  /** Where lines go; default standard output, written asynchronously. */
  destination?: DestinationStream;
}

/** A pino logger for an OXP server: JSON lines, credentials redacted. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const settings = {
    // What callLineWriter writes by hand: keep the two in step.
    level: options.level ?? process.env.LOG_LEVEL ?? "info",
    base: { service: "oxp-server" },
    redact: { paths: [...REDACTED_PATHS], censor: REDACTED },
  };
  const destination = options.destination ?? new BatchedStdout();
  const logger = pino(settings, destination);
  // A destination that reads each line's level (pino.multistream) is told it by pino's own write only.
  if ((destination as { [pino.symbols.needsMetadataGsym]?: boolean })[pino.symbols.needsMetadataGsym]) {
    return logger;
  }
  sinks.set(logger, callLineWriter(logger, destination));
  return logger;
}

/** The call-line sinks of the loggers {@link createLogger} made: a logger's own, not one its children inherit. */
const sinks = new WeakMap<object, CallLineSink>();

/**
 * The call-line sink of a logger {@link createLogger} made (for `OxpCoreOptions.callLine`), which writes each call's
 * line as its `info` would at less cost; undefined for any other logger, whose `info` then writes it.
 */
export function callLineSink(logger: unknown): CallLineSink | undefined {
  return typeof logger === "object" && logger !== null ? sinks.get(logger) : undefined;
}

/**
 * Writes a call's line as `logger.info(line, "tool call")` would with the settings above, field for field
 * (logger.test.ts compares the two), without pino's generic path, which costs more per call (bench/results/notes.md).
 * Into the batched standard output the line goes unformatted, with its time: it is formatted with the rest of its
 * batch, in one loop, not between one request's work and the next.
 */
function callLineWriter(logger: Logger, destination: DestinationStream): CallLineSink {
  const deferred = destination instanceof BatchedStdout ? destination : undefined;
  // Kept in step with the logger's level, so that a call reads one boolean, not pino's level (a child's change is
  // told to its parent's listeners too, with the child as the last argument).
  let enabled = logger.levelVal <= INFO;
  logger.on("level-change", (...change) => {
    const [, value, , , changed] = change;
    if (changed === logger) {
      enabled = value <= INFO;
    }
  });
  return {
    enabled: () => enabled,
    write(line) {
      if (!enabled) {
        return;
      }
      if (deferred) {
        deferred.writeCallLine(line, Date.now());
      } else {
        destination.write(formatCallLine(line, Date.now()));
      }
    },
  };
}

const INFO = pino.levels.values.info as number;

/** A character JSON writes escaped, or one this fast path leaves to JSON.stringify. */
const NEEDS_STRINGIFY = /[^\w.@:-]/;

/** A string as JSON: ids and outcomes are plain ASCII, quoted as they are; anything else goes through JSON.stringify. */
function quote(value: string): string {
  return NEEDS_STRINGIFY.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** A call's line as pino's `info(line, "tool call")` writes it with {@link createLogger}'s settings. */
function formatCallLine(line: CallLogLine, time: number): string {
  let text = `{"level":${INFO},"time":${time},"service":"oxp-server","tool_id":${quote(line.tool_id)}`;
  if (line.requested_tool_id !== undefined) {
    text += `,"requested_tool_id":${quote(line.requested_tool_id)}`;
  }
  if (line.call_id !== undefined) {
    text += `,"call_id":${quote(line.call_id)}`;
  }
  if (line.trace_id !== undefined) {
    text += `,"trace_id":${quote(line.trace_id)}`;
  }
  text += `,"outcome":${quote(line.outcome)}`;
  if (line.status !== undefined) {
    text += `,"status":${line.status}`;
  }
  if (line.reason !== undefined) {
    text += `,"reason":${quote(line.reason)}`;
  }
  const duration = Number.isFinite(line.duration_ms) ? line.duration_ms : null;
  return `${text},"duration_ms":${duration},"msg":"tool call"}\n`;
}

/** How much standard output gathers before one write. */
const BATCH_CHARS = 4096;
/** About how long a call's line is, for the batch's size before it is formatted. */
const CALL_LINE_CHARS = 192;

/** The flush of every batched standard output: one timer and one exit hook serve them all. */
const batches = new Set<BatchedStdout>();
let flushing = false;

function flushBatches(): void {
  for (const batch of batches) {
    batch.flush();
  }
}

/**
 * Standard output in batches of about 4 KiB, flushed at least every 250 ms and when the process exits: not one
 * system call per line (under load, a write per call cost more than the call). The lines are joined once per
 * batch; sonic-boom's own `minLength` re-measures its whole buffer on every line. sonic-boom still does each
 * write, synchronously as is pino's default (an asynchronous one goes through libuv's thread pool, which costs
 * more per call under load: bench/results/notes.md), retrying where the pipe is full. Call lines wait in the batch
 * unformatted, in their place among pino's lines.
 */
class BatchedStdout implements DestinationStream {
  private readonly out = pino.destination({ dest: 1, sync: true });
  /** Pino's lines, and call lines as their time followed by the line. */
  private pending: (string | number | CallLogLine)[] = [];
  private chars = 0;
  private closed = false;

  constructor() {
    if (!flushing) {
      flushing = true;
      setInterval(flushBatches, 250).unref();
      process.once("exit", flushBatches);
    }
    batches.add(this);
  }

  write(line: string): void {
    if (this.closed) {
      return;
    }
    this.pending.push(line);
    this.chars += line.length;
    if (this.chars >= BATCH_CHARS) {
      this.flush();
    }
  }

  /** A call's line, formatted when its batch is written. */
  writeCallLine(line: CallLogLine, time: number): void {
    if (this.closed) {
      return;
    }
    this.pending.push(time, line);
    this.chars += CALL_LINE_CHARS;
    if (this.chars >= BATCH_CHARS) {
      this.flush();
    }
  }

  flush(done?: () => void): void {
    if (this.chars > 0) {
      this.writeBatch();
    }
    done?.();
  }

  private writeBatch(): void {
    const pending = this.pending;
    this.pending = [];
    this.chars = 0;
    let batch = "";
    for (let i = 0; i < pending.length; i++) {
      const entry = pending[i];
      batch += typeof entry === "number" ? formatCallLine(pending[++i] as CallLogLine, entry) : entry;
    }
    try {
      this.out.write(batch);
    } catch {
      // Standard output is gone (a closed pipe): logging stops, the calls go on.
      this.closed = true;
      batches.delete(this);
    }
  }
}
