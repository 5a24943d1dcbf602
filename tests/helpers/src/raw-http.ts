// Raw HTTP over sockets for the hostile-request property tests (packages/server and apps/demo): send bytes as they are, read the one answer, and the rules every answer keeps.
import { connect } from "node:net";
import fc from "fast-check";

/** Every socket read is bounded: a hung connection fails the run with this much patience. */
const READ_LIMIT_MS = 5_000;
/** How long to keep reading after a complete answer on a connection the server keeps open. */
const STRAY_GRACE_MS = 100;

// ---------------------------------------------------------------------------------------------
// The rules every answer is held to.

/** A stack trace in any form, raw or inside a JSON string (where its newlines are `\n`). */
const STACK_PATTERNS: readonly RegExp[] = [/(\n|\\n)\s+at /, /Error:.*?(\n|\\n)\s+at /, /node_modules/];
/** A file path of the machine. */
const PATH_PATTERNS: readonly RegExp[] = [/\/work\//, /\/home\//, /\/usr\//, /\.ts:\d+/, /\.js:\d+/];
export const LEAK_PATTERNS = [...STACK_PATTERNS, ...PATH_PATTERNS];

// ---------------------------------------------------------------------------------------------
// Raw sockets and a small HTTP/1.1 response parser.

/** One parsed HTTP response. */
export interface Answer {
  status: number;
  /** Header names lowercased, every occurrence kept. */
  headers: [string, string][];
  body: Buffer;
  /** Statuses of interim (1xx) responses before this one. */
  interim: number[];
  /** Bytes that came after the answer's end. */
  trailing: Buffer;
}

const headerValues = (answer: Answer, name: string) =>
  answer.headers.filter(([key]) => key === name).map(([, value]) => value);
export const header = (answer: Answer, name: string) => headerValues(answer, name)[0];
export const closes = (answer: Answer) => /(^|,)\s*close\s*(,|$)/i.test(header(answer, "connection") ?? "");

/**
 * Parses the bytes received so far as one final HTTP/1.x response (after any 1xx): undefined while
 * incomplete (a body without length is complete only once `closed`); throws saying what is wrong.
 */
function parseAnswer(raw: Buffer, bodiless: boolean, closed: boolean): Answer | undefined {
  const interim: number[] = [];
  let offset = 0;
  for (;;) {
    const end = raw.indexOf("\r\n\r\n", offset, "latin1");
    if (end < 0) {
      if (closed) {
        throw new Error("the answer has no complete head (no CRLFCRLF)");
      }
      return undefined;
    }
    const [statusLine = "", ...lines] = raw.toString("latin1", offset, end).split("\r\n");
    const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine);
    if (!match) {
      throw new Error(`not an HTTP status line: ${shown(statusLine, 200)}`);
    }
    const status = Number(match[1]);
    const headers: [string, string][] = [];
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon <= 0) {
        throw new Error(`not a header line: ${shown(line, 200)}`);
      }
      headers.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
    }
    offset = end + 4;
    if (status >= 100 && status < 200) {
      interim.push(status);
      continue;
    }
    const answer: Answer = { status, headers, body: Buffer.alloc(0), interim, trailing: Buffer.alloc(0) };
    const rest = raw.subarray(offset);
    const length = header(answer, "content-length");
    if (bodiless || status === 204 || status === 304) {
      answer.trailing = rest;
    } else if (/chunked/i.test(header(answer, "transfer-encoding") ?? "")) {
      const decoded = decodeChunked(rest);
      if (!decoded) {
        if (closed) {
          throw new Error("the connection closed inside a chunked body");
        }
        return undefined;
      }
      answer.body = decoded.body;
      answer.trailing = rest.subarray(decoded.used);
    } else if (length !== undefined) {
      if (!/^\d+$/.test(length)) {
        throw new Error(`Content-Length is not a number: ${length}`);
      }
      if (rest.length < Number(length)) {
        if (closed) {
          throw new Error(`Content-Length says ${length} bytes but ${rest.length} came before the close`);
        }
        return undefined;
      }
      answer.body = rest.subarray(0, Number(length));
      answer.trailing = rest.subarray(Number(length));
    } else {
      if (!closed) {
        return undefined;
      }
      answer.body = rest;
    }
    return answer;
  }
}

/** A chunked body and the bytes it took, or undefined while its last chunk has not arrived. */
function decodeChunked(data: Buffer): { body: Buffer; used: number } | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", offset, "latin1");
    if (lineEnd < 0) {
      return undefined;
    }
    const sizeText = data.toString("latin1", offset, lineEnd).split(";")[0]?.trim() ?? "";
    if (!/^[0-9a-f]+$/i.test(sizeText)) {
      throw new Error(`a chunk size is not hexadecimal: ${shown(sizeText, 40)}`);
    }
    const size = Number.parseInt(sizeText, 16);
    offset = lineEnd + 2;
    if (size === 0) {
      // Trailer fields (none expected), then the final CRLF.
      const trailerEnd = data.indexOf("\r\n", offset, "latin1");
      if (trailerEnd < 0) {
        return undefined;
      }
      return { body: Buffer.concat(parts), used: trailerEnd + 2 };
    }
    if (offset + size + 2 > data.length) {
      return undefined;
    }
    parts.push(data.subarray(offset, offset + size));
    offset += size + 2;
  }
}

/** What came back on one connection. */
interface Exchanged {
  raw: Buffer;
  /** The parsed answer, or why the bytes are not one. */
  answer?: Answer;
  parseError?: string;
  /** The socket error seen, if any (EPIPE, ECONNRESET...). */
  socketError?: string;
}

/**
 * Writes `request` on a fresh connection and reads one answer: up to its end and {@link STRAY_GRACE_MS}
 * more when the server keeps the connection open, up to the close when it says `Connection: close`
 * (so stray bytes after the answer show either way).
 * Rejects when neither happens within {@link READ_LIMIT_MS}.
 */
function exchange(port: number, request: Buffer, bodiless: boolean): Promise<Exchanged> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let socketError: string | undefined;
    let settled = false;
    const socket = connect(port, "127.0.0.1");
    let grace: NodeJS.Timeout | undefined;
    const finish = (closed: boolean, graceOver = false) => {
      if (settled) {
        return;
      }
      const raw = Buffer.concat(chunks);
      let answer: Answer | undefined;
      try {
        answer = parseAnswer(raw, bodiless, closed);
      } catch (error) {
        if (!closed) {
          return;
        }
        settled = true;
        resolve({ raw, parseError: (error as Error).message, ...(socketError ? { socketError } : {}) });
        return;
      }
      if (!closed && (!answer || closes(answer))) {
        return;
      }
      if (!closed && !graceOver) {
        // A complete answer on a connection kept open: anything more the server sends soon is stray.
        grace ??= setTimeout(() => finish(false, true), STRAY_GRACE_MS);
        return;
      }
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      socket.destroy();
      resolve({ raw, ...(answer ? { answer } : {}), ...(socketError ? { socketError } : {}) });
    };
    const timer = setTimeout(() => {
      settled = true;
      socket.destroy();
      const got = Buffer.concat(chunks);
      reject(
        new Error(
          `no complete answer within ${READ_LIMIT_MS} ms and the connection stayed open; got ${got.length} bytes: ${shown(got.toString("latin1"), 300)}`,
        ),
      );
    }, READ_LIMIT_MS);
    socket.on("connect", () => socket.write(request, () => undefined));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      finish(false);
    });
    socket.on("error", (failure: NodeJS.ErrnoException) => {
      socketError ??= failure.code ?? failure.message;
    });
    socket.on("end", () => socket.destroy());
    socket.on("close", () => {
      clearTimeout(timer);
      clearTimeout(grace);
      if (chunks.length === 0 && !settled) {
        settled = true;
        resolve({ raw: Buffer.alloc(0), ...(socketError ? { socketError } : {}) });
        return;
      }
      finish(true);
    });
  });
}

/**
 * Sends a request and returns its one answer; throws when there is none (a silent close), when the
 * bytes are not one HTTP response, or when bytes follow it.
 */
export async function receive(port: number, request: Buffer, head: boolean): Promise<Answer> {
  const exchanged = await exchange(port, request, head);
  const error = exchanged.socketError ? ` (${exchanged.socketError})` : "";
  if (exchanged.raw.length === 0) {
    throw new Error(`no answer: the connection closed without a byte${error}`);
  }
  const { answer } = exchanged;
  if (!answer) {
    throw new Error(
      `not one well-formed HTTP answer: ${exchanged.parseError ?? "incomplete"}${error}; got ${shown(exchanged.raw.toString("latin1"))}`,
    );
  }
  // An answer to a request Node's parser refused is written before the method is known to the
  // writer, so it has a body even for HEAD; harmless, as the connection closes right after it.
  const refusedHead =
    head &&
    answer.status >= 400 &&
    answer.status < 500 &&
    closes(answer) &&
    answer.trailing.length === Number(header(answer, "content-length"));
  if (refusedHead) {
    answer.body = answer.trailing;
  } else if (answer.trailing.length > 0) {
    throw new Error(
      `${answer.trailing.length} bytes follow the answer${head ? " to a HEAD request" : ""}: ${shown(answer.trailing.toString("latin1"), 200)}\n  answer: ${describeAnswer(answer)}`,
    );
  }
  return answer;
}

/** Text for a failure message: quoted, cut at `max`, bytes outside printable ASCII escaped. */
export const escaped = (text: string) =>
  text.replace(/[^\x20-\x7e]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
export const shown = (text: string, max = 400) =>
  `"${escaped(text.length > max ? `${text.slice(0, max)}... (${text.length} chars)` : text).replace(/"/g, '\\"')}"`;

/** A short account of an answer for failure messages. */
export function describeAnswer(answer: Answer): string {
  const head = answer.headers.map(([name, value]) => `${name}: ${value}`).join(" | ");
  return `${answer.status} [${head}] ${shown(answer.body.toString("utf8"))}`;
}

/** The rules every answer to any request follows; returns the broken ones. */
export function leaks(answer: Answer): string[] {
  const text = `${answer.headers.map(([name, value]) => `${name}: ${value}`).join("\n")}\n\n${answer.body.toString("utf8")}`;
  return LEAK_PATTERNS.filter((pattern) => pattern.test(text)).map((pattern) => `leaks ${pattern} (stack or path)`);
}

export function oxpVersionProblems(answer: Answer): string[] {
  const values = headerValues(answer, "oxp-version");
  return values.length === 1 && values[0] === "1.0" ? [] : [`OXP-Version is ${JSON.stringify(values)}, not "1.0"`];
}

/** A JSON error body: an object with a string `message`. */
export function jsonErrorBodyProblems(answer: Answer): string[] {
  try {
    const body = JSON.parse(answer.body.toString("utf8")) as unknown;
    const message = (body as { message?: unknown } | null)?.message;
    return typeof body === "object" && body !== null && !Array.isArray(body) && typeof message === "string"
      ? []
      : ['the JSON error body has no string "message"'];
  } catch {
    return ["the error body is not JSON"];
  }
}

export const isJson = (contentType: string | undefined) => /^application\/json\s*(;|$)/i.test(contentType ?? "");

// ---------------------------------------------------------------------------------------------
// fast-check helpers.

/** Gives a generated value a readable form in fast-check's counter-example report. */
export function printable<T extends object>(value: T, describe: (value: T) => string): T {
  return Object.assign(value, { [fc.toStringMethod]: () => describe(value) });
}

/** One of the given values. */
export const pick = <T>(...values: T[]) => fc.constantFrom(...values);
/** One of the given arbitraries, each drawn as often as its weight says. */
export const weighted = <T>(...entries: [number, fc.Arbitrary<T>][]) =>
  fc.oneof(...entries.map(([weight, arbitrary]) => ({ weight, arbitrary })));
/** An HTTP token (a method or a header name): tchar only. */
export const token = fc
  .array(pick(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&'*+-.^_`|~"), {
    minLength: 1,
    maxLength: 20,
  })
  .map((chars) => chars.join(""));
