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
  "*.context.secrets",
  "*.context.authorization",
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
  /** Where lines go; default standard output. */
  destination?: DestinationStream;
}

/** A pino logger for an OXP server: JSON lines, credentials redacted. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const settings = {
    level: options.level ?? process.env.LOG_LEVEL ?? "info",
    base: { service: "oxp-server" },
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
  };
  return options.destination ? pino(settings, options.destination) : pino(settings);
}
