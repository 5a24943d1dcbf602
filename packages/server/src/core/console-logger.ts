/** A logger for runtimes without pino (Deno, workerd, Bun's fetch servers): pino's JSON lines, on the console. */
import { ServerConfigError } from "./errors.js";
import type { CoreLogger } from "./oxp-core.js";

/**
 * Paths censored wherever they appear in a log line, should any code ever log them (pino's `redact` path syntax).
 * The one list: pino's logger (http/logger.ts) and {@link consoleLogger} both use it.
 */
export const REDACTED_PATHS: readonly string[] = [
  "headers.authorization",
  'headers["oxp-api-key"]',
  "req.headers.authorization",
  'req.headers["oxp-api-key"]',
  "context.secrets",
  "context.authorization",
  // Named paths, not `*.context.secrets`: a leading wildcard triples the cost of every pino line.
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

/** What a redacted value is written as (pino's `censor` in http/logger.ts). */
export const REDACTED = "[redacted]";

/** pino's level numbers. */
const LEVELS = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
} as const;

/** A level's number; undefined for a name that is none. */
const levelOf = (name: string): number | undefined =>
  Object.hasOwn(LEVELS, name) ? LEVELS[name as keyof typeof LEVELS] : undefined;

/** Options of {@link consoleLogger}. */
export interface ConsoleLoggerOptions {
  /** The lowest level written: `trace`, `debug`, `info`, `warn`, `error`, `fatal` or `silent`. Default `info`. */
  level?: string;
}

/** A redaction path as a tree: a leaf (`true`) is censored, `*` matches any key. */
type PathTree = Map<string, PathTree | true>;

/** The segments of a pino path: `a.b`, `a["b-c"]`, `a.*`. */
function segmentsOf(path: string): string[] {
  const segments: string[] = [];
  for (const [, plain, quoted] of path.matchAll(/\.?([^.[\]]+)|\[["']([^"']*)["']\]/g)) {
    segments.push((plain ?? quoted) as string);
  }
  return segments;
}

function pathTree(paths: readonly string[]): PathTree {
  const root: PathTree = new Map();
  for (const path of paths) {
    const segments = segmentsOf(path);
    let node = root;
    segments.forEach((segment, index) => {
      if (index === segments.length - 1) {
        node.set(segment, true);
        return;
      }
      const next = node.get(segment);
      if (next === true) {
        return;
      }
      const child: PathTree = next ?? new Map();
      node.set(segment, child);
      node = child;
    });
  }
  return root;
}

const REDACTIONS = pathTree(REDACTED_PATHS);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `record` with the paths of `tree` censored: a copy along each censored path, the caller's objects untouched. */
function redact(record: Record<string, unknown>, tree: PathTree): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(record)) {
    const rule = tree.get(key) ?? tree.get("*");
    if (rule === undefined) {
      continue;
    }
    const value = record[key];
    const replaced = rule === true ? REDACTED : isRecord(value) ? redact(value, rule) : value;
    if (replaced === value) {
      continue;
    }
    copy ??= { ...record };
    Object.defineProperty(copy, key, { value: replaced, enumerable: true, writable: true, configurable: true });
  }
  return copy ?? record;
}

/** An Error as pino's `err` serializer writes one; other values as they are. */
function serializable(value: unknown): unknown {
  if (!(value instanceof Error)) {
    return value;
  }
  return { type: value.name, message: value.message, stack: value.stack };
}

/** JSON that never throws: a cycle is written `[Circular]` and a BigInt as its digits. */
function stringify(record: Record<string, unknown>): string {
  try {
    return JSON.stringify(record);
  } catch {
    const seen = new WeakSet<object>();
    return JSON.stringify(record, (_key, value: unknown) => {
      if (typeof value === "bigint") {
        return value.toString();
      }
      if (typeof value === "object" && value !== null) {
        if (seen.has(value)) {
          return "[Circular]";
        }
        seen.add(value);
      }
      return value;
    });
  }
}

/**
 * A {@link CoreLogger} writing one JSON object per line, as pino does: `level` (pino's numbers), `time`, `service`
 * (`oxp-server`), the child bindings, the fields, then `msg`; credentials redacted as {@link REDACTED_PATHS} says.
 * Lines of `warn` and above go to `console.error`, the others to `console.log`. For runtimes other than Node, where
 * the console is the log (workerd's `wrangler tail`, Deno Deploy).
 *
 * @example
 * const logger = consoleLogger({ level: "debug" });
 * logger.child({ request_id: "r1" }).info({ tool_id: "Math.Add@1.0.0" }, "tool call");
 * // {"level":30,"time":1732406400000,"service":"oxp-server","request_id":"r1","tool_id":"Math.Add@1.0.0","msg":"tool call"}
 */
export function consoleLogger(options: ConsoleLoggerOptions = {}): CoreLogger {
  const levelName = options.level ?? "info";
  const threshold = levelOf(levelName);
  if (threshold === undefined) {
    throw new ServerConfigError(`Unknown log level '${levelName}' (${Object.keys(LEVELS).join(", ")})`);
  }
  return makeLogger(threshold, {});
}

function makeLogger(threshold: number, bindings: Record<string, unknown>): CoreLogger {
  const write = (level: number, fields: Record<string, unknown> | string, message?: string) => {
    if (level < threshold) {
      return;
    }
    const [object, msg] = typeof fields === "string" ? [{}, fields] : [fields ?? {}, message];
    const record: Record<string, unknown> = { level, time: Date.now(), service: "oxp-server" };
    for (const source of [bindings, object]) {
      for (const [key, value] of Object.entries(source)) {
        Object.defineProperty(record, key, {
          value: serializable(value),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    if (msg !== undefined) {
      record.msg = msg;
    }
    const line = stringify(redact(record, REDACTIONS));
    // Written to the console by design: this logger is for runtimes without pino.
    if (level >= LEVELS.warn) {
      // biome-ignore lint/suspicious/noConsole: the console is this logger's destination
      console.error(line);
    } else {
      // biome-ignore lint/suspicious/noConsole: the console is this logger's destination
      console.log(line);
    }
  };
  return {
    debug: (fields, message) => write(LEVELS.debug, fields, message),
    info: (fields, message) => write(LEVELS.info, fields, message),
    warn: (fields, message) => write(LEVELS.warn, fields, message),
    error: (fields, message) => write(LEVELS.error, fields, message),
    child: (more) => makeLogger(threshold, { ...bindings, ...more }),
    isLevelEnabled: (level) => level !== "silent" && (levelOf(level) ?? -1) >= threshold,
  };
}
