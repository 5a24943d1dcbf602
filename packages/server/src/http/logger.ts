/** Structured JSON logs (pino) with every place a credential could sit redacted. */
import { type DestinationStream, type Logger, pino } from "pino";
import { REDACTED, REDACTED_PATHS } from "../core/console-logger.js";
import { type CallLogLine, WRITE_CALL_LINE } from "../core/oxp-core.js";

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
  const destination = options.destination ?? batchedStdout();
  const logger = pino(settings, destination);
  // A destination that reads each line's level (pino.multistream) is told it by pino's own write only.
  if ((destination as { [pino.symbols.needsMetadataGsym]?: boolean })[pino.symbols.needsMetadataGsym]) {
    return logger;
  }
  return Object.assign(logger, { [WRITE_CALL_LINE]: callLineWriter(logger, destination) });
}

/**
 * Writes a call's line as `logger.info(line, "tool call")` would with the settings above, field for field
 * (logger.test.ts compares the two), without pino's generic path, which costs more per call (bench/results/notes.md).
 */
function callLineWriter(logger: Logger, destination: DestinationStream): (line: CallLogLine) => void {
  const info = pino.levels.values.info as number;
  return (line) => {
    if (logger.levelVal > info) {
      return;
    }
    let text = `{"level":${info},"time":${Date.now()},"service":"oxp-server","tool_id":${JSON.stringify(line.tool_id)}`;
    if (line.requested_tool_id !== undefined) {
      text += `,"requested_tool_id":${JSON.stringify(line.requested_tool_id)}`;
    }
    if (line.call_id !== undefined) {
      text += `,"call_id":${JSON.stringify(line.call_id)}`;
    }
    if (line.trace_id !== undefined) {
      text += `,"trace_id":${JSON.stringify(line.trace_id)}`;
    }
    text += `,"outcome":${JSON.stringify(line.outcome)}`;
    if (line.status !== undefined) {
      text += `,"status":${line.status}`;
    }
    if (line.reason !== undefined) {
      text += `,"reason":${JSON.stringify(line.reason)}`;
    }
    const duration = Number.isFinite(line.duration_ms) ? line.duration_ms : null;
    destination.write(`${text},"duration_ms":${duration},"msg":"tool call"}\n`);
  };
}

/** How much standard output gathers before one write. */
const BATCH_CHARS = 4096;

/** The flush of every batched standard output: one timer and one exit hook serve them all. */
const batches = new Set<() => void>();
let flushing = false;

function flushBatches(): void {
  for (const flush of batches) {
    flush();
  }
}

/**
 * Standard output in batches of about 4 KiB, flushed at least every 250 ms and when the process exits: not one
 * system call per line (under load, a write per call cost more than the call). The lines are joined once per
 * batch; sonic-boom's own `minLength` re-measures its whole buffer on every line. sonic-boom still does each
 * write, synchronously as is pino's default (an asynchronous one goes through libuv's thread pool, which costs
 * more per call under load: bench/results/notes.md), retrying where the pipe is full.
 */
function batchedStdout(): DestinationStream & { flush(done?: () => void): void } {
  const out = pino.destination({ dest: 1, sync: true });
  let lines: string[] = [];
  let chars = 0;
  let closed = false;
  const flush = () => {
    if (chars === 0) {
      return;
    }
    const batch = lines.join("");
    lines = [];
    chars = 0;
    try {
      out.write(batch);
    } catch {
      // Standard output is gone (a closed pipe): logging stops, the calls go on.
      closed = true;
      batches.delete(flush);
    }
  };
  if (!flushing) {
    flushing = true;
    setInterval(flushBatches, 250).unref();
    process.once("exit", flushBatches);
  }
  batches.add(flush);
  return {
    write(line: string) {
      if (closed) {
        return;
      }
      lines.push(line);
      chars += line.length;
      if (chars >= BATCH_CHARS) {
        flush();
      }
    },
    flush(done?: () => void) {
      flush();
      done?.();
    },
  };
}
