/** Structured JSON logs (pino) with every place a credential could sit redacted. */
import { type DestinationStream, type Logger, pino } from "pino";

/** Paths censored wherever they appear in a log line, should any code ever log them. */
export const REDACTED_PATHS = [
  "headers.authorization",
  'headers["oxp-api-key"]',
  "req.headers.authorization",
  'req.headers["oxp-api-key"]',
  "context.secrets",
  "context.authorization",
  // Named paths, not `*.context.secrets`: a leading wildcard triples the cost of every log line.
  "request.context.secrets",
  "request.context.authorization",
  "body.context.secrets",
  "body.context.authorization",
  "req.body.context.secrets",
  "req.body.context.authorization",
  "body.request.context.secrets",
  "body.request.context.authorization",
  "secrets",
  "tokens",
  "token",
  "apiKey",
  "jwtSecret",
];

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
    level: options.level ?? process.env.LOG_LEVEL ?? "info",
    base: { service: "oxp-server" },
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
  };
  if (options.destination) return pino(settings, options.destination);
  // Standard output written in 4 KiB batches, not one system call per line (under load, a write per call
  // cost more than the call), flushed at least every 250 ms; pino flushes what is left when the process exits.
  const stdout = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  const flusher = setInterval(() => {
    try {
      stdout.flush();
    } catch {
      clearInterval(flusher); // the stream has closed
    }
  }, 250);
  flusher.unref();
  return pino(settings, stdout);
}
