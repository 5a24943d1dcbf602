// A property over raw sockets: malformed HTTP, whatever its kind, gets a 4xx JSON answer with OXP-Version (never silence, a stack or a path), and the server stays healthy.
import {
  describeAnswer,
  header,
  isJson,
  jsonErrorBodyProblems,
  leaks,
  oxpVersionProblems,
  pick,
  printable,
  receive,
  token,
} from "@otc/test-helpers/raw-http";
import { verifies } from "@otc/test-helpers/verifies";
import fc from "fast-check";
import { afterAll, beforeAll, describe } from "vitest";
import { expectHealthy, type Running, startServer } from "./harness.js";

const API_KEY = "malformed-http-test-key";
const JWT_SECRET = "malformed-http-test-secret-of-enough-length-0123456789";

// ---------------------------------------------------------------------------------------------
// Malformed requests: bytes Node's parser (or the server) must refuse.

type Malformed =
  | { kind: "garbage request line"; first: string; rest: string }
  | { kind: "bad request target"; path: string; bad: string }
  | { kind: "bad HTTP version"; version: string }
  | { kind: "invalid header name"; name: string }
  | { kind: "header line without colon"; line: string }
  | { kind: "control character in header value"; char: string }
  | { kind: "bare LF line endings"; lines: number; path: string }
  | { kind: "HTTP/1.1 without Host"; path: string; headers: number }
  | { kind: "two Host headers"; second: string }
  | { kind: "too many headers"; count: number }
  | { kind: "one huge header"; size: number }
  | { kind: "huge request line"; size: number }
  | { kind: "CONNECT"; authority: string }
  | { kind: "Content-Length and chunked"; length: number }
  | { kind: "two different Content-Lengths"; first: number; second: number }
  | { kind: "Content-Length not a number"; value: string }
  | { kind: "bad chunk"; chunk: string }
  | { kind: "obsolete line folding"; folded: string };

function renderMalformed(request: Malformed, host: string): string {
  const h = `Host: ${host}\r\n`;
  switch (request.kind) {
    case "garbage request line":
      return `${request.first}${request.rest}\r\n${h}\r\n`;
    case "bad request target":
      return `GET ${request.path}${request.bad}${request.path} HTTP/1.1\r\n${h}\r\n`;
    case "bad HTTP version":
      return `GET /health ${request.version}\r\n${h}\r\n`;
    case "invalid header name":
      return `GET /health HTTP/1.1\r\n${h}${request.name}: value\r\n\r\n`;
    case "header line without colon":
      return `GET /health HTTP/1.1\r\n${h}${request.line}\r\n\r\n`;
    case "control character in header value":
      return `GET /health HTTP/1.1\r\n${h}X-Value: a${request.char}b\r\n\r\n`;
    case "bare LF line endings": {
      const lines = [`GET ${request.path} HTTP/1.1`, `Host: ${host}`, "Accept: */*", "X-Filler: 1"];
      // The first `lines` line ends with a bare LF, the others with CRLF.
      return `${lines.map((line, index) => `${line}${index < request.lines ? "\n" : "\r\n"}`).join("")}${request.lines >= lines.length ? "\n" : "\r\n"}`;
    }
    case "HTTP/1.1 without Host":
      return `GET ${request.path} HTTP/1.1\r\n${Array.from({ length: request.headers }, (_, index) => `X-H${index}: v\r\n`).join("")}\r\n`;
    case "two Host headers":
      return `GET /health HTTP/1.1\r\n${h}Host: ${request.second}\r\n\r\n`;
    case "too many headers":
      return `GET /health HTTP/1.1\r\n${h}${Array.from({ length: request.count }, (_, index) => `X-Header-${String(index).padStart(5, "0")}: some value\r\n`).join("")}\r\n`;
    case "one huge header":
      return `GET /health HTTP/1.1\r\n${h}X-Big: ${"a".repeat(request.size)}\r\n\r\n`;
    case "huge request line":
      return `GET /${"a".repeat(request.size)} HTTP/1.1\r\n${h}\r\n`;
    case "CONNECT":
      return `CONNECT ${request.authority} HTTP/1.1\r\nHost: ${request.authority}\r\n\r\n`;
    case "Content-Length and chunked":
      return `POST /tools/call HTTP/1.1\r\n${h}Content-Type: application/json\r\nContent-Length: ${request.length}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`;
    case "two different Content-Lengths":
      return `POST /tools/call HTTP/1.1\r\n${h}Content-Type: application/json\r\nContent-Length: ${request.first}\r\nContent-Length: ${request.second}\r\n\r\n${"{".repeat(Math.max(request.first, request.second))}`;
    case "Content-Length not a number":
      return `POST /tools/call HTTP/1.1\r\n${h}Content-Type: application/json\r\nContent-Length: ${request.value}\r\n\r\n{}`;
    case "bad chunk":
      return `POST /tools/call HTTP/1.1\r\n${h}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${request.chunk}\r\n`;
    case "obsolete line folding":
      return `GET /health HTTP/1.1\r\n${h}X-Folded: a\r\n${request.folded}\r\n\r\n`;
  }
}

function malformedRequests(): fc.Arbitrary<Malformed> {
  const char = (min: number, max: number) => fc.integer({ min, max }).map((code) => String.fromCharCode(code));
  // Not A-Z (a method's first letter) nor CR/LF (empty lines before a request are skipped).
  const firstChar = fc
    .integer({ min: 0, max: 0xff })
    .filter((code) => !(code >= 0x41 && code <= 0x5a) && code !== 0x0d && code !== 0x0a)
    .map((code) => String.fromCharCode(code));
  const lineChars = fc.string({ unit: char(0x20, 0x7e), maxLength: 60 });
  const notTchar = pick(...' @(),/;<=>?[\\]{}"', "\x01", "\x7f", "\x00");
  const path = pick("/health", "/tools/call", "/authorization/challenges/x", "/tools");
  return fc.oneof(
    fc.record({ kind: fc.constant("garbage request line" as const), first: firstChar, rest: lineChars }),
    fc.record({
      kind: fc.constant("bad request target" as const),
      path,
      bad: pick(" x ", "\x00", "\x01", "\x7f", "\x1b"),
    }),
    fc.record({
      kind: fc.constant("bad HTTP version" as const),
      version: pick("HTTQ/1.1", "HTTP/1.1x", "HTTP/11", "HTTP/1.", "HTTP/a.b", "http/1.1", "HTTP /1.1"),
    }),
    fc.record({
      kind: fc.constant("invalid header name" as const),
      name: fc
        .tuple(token, notTchar, fc.option(token, { nil: "" }))
        .map(([before, bad, after]) => `${before}${bad}${after}`),
    }),
    fc.record({ kind: fc.constant("invalid header name" as const), name: pick("", " Leading-Space", "X Y") }),
    fc.record({
      kind: fc.constant("header line without colon" as const),
      line: fc
        .array(pick(..."abcdefghijklmnopqrstuvwxyz-"), { minLength: 1, maxLength: 20 })
        .map((chars) => chars.join("")),
    }),
    fc.record({
      kind: fc.constant("control character in header value" as const),
      char: pick("\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1f", "\x7f", "\r"),
    }),
    fc.record({ kind: fc.constant("bare LF line endings" as const), lines: fc.integer({ min: 1, max: 4 }), path }),
    fc.record({ kind: fc.constant("HTTP/1.1 without Host" as const), path, headers: fc.integer({ min: 0, max: 3 }) }),
    fc.record({ kind: fc.constant("two Host headers" as const), second: pick("evil.example", "127.0.0.1", "") }),
    fc.record({ kind: fc.constant("too many headers" as const), count: fc.integer({ min: 700, max: 4_000 }) }),
    fc.record({ kind: fc.constant("one huge header" as const), size: fc.integer({ min: 17_000, max: 80_000 }) }),
    fc.record({ kind: fc.constant("huge request line" as const), size: fc.integer({ min: 17_000, max: 80_000 }) }),
    fc.record({
      kind: fc.constant("CONNECT" as const),
      authority: pick("example.com:443", "127.0.0.1:22", "[::1]:443", "/health"),
    }),
    fc.record({ kind: fc.constant("Content-Length and chunked" as const), length: fc.integer({ min: 0, max: 20 }) }),
    fc
      .record({ kind: fc.constant("two different Content-Lengths" as const), first: fc.nat(20), second: fc.nat(20) })
      .filter(({ first, second }) => first !== second),
    fc.record({
      kind: fc.constant("Content-Length not a number" as const),
      value: pick("abc", "-1", "1.5", "0x10", "1 2", "+2", "99999999999999999999999"),
    }),
    fc.record({
      kind: fc.constant("bad chunk" as const),
      chunk: pick("zz", "-1", "ffffffffffffffffffff", "2\r\n{}x", "2;\x01=1\r\n{}", " 2"),
    }),
    fc.record({ kind: fc.constant("obsolete line folding" as const), folded: pick(" b", "\tb", "  more text") }),
  );
}

function describeMalformed(request: Malformed): string {
  const { kind, ...rest } = request;
  return `${kind} ${JSON.stringify(rest)}`;
}

// ---------------------------------------------------------------------------------------------

describe("the server under malformed HTTP over raw sockets", () => {
  let server: Running;
  let port: number;
  let host: string;

  beforeAll(async () => {
    server = await startServer({ auth: { apiKeys: [API_KEY], jwt: { secret: JWT_SECRET } } });
    const url = new URL(server.baseUrl);
    port = Number(url.port);
    host = url.host;
  });
  afterAll(() => server?.close());

  /** The property: malformed HTTP gets a 4xx JSON answer with OXP-Version, never silence. */
  async function expectRefusal(request: Malformed): Promise<void> {
    const answer = await receive(port, Buffer.from(renderMalformed(request, host), "latin1"), false);
    const problems = [...oxpVersionProblems(answer), ...leaks(answer)];
    if (answer.status < 400 || answer.status >= 500) {
      problems.push(`status ${answer.status}, not 4xx`);
    }
    if (!isJson(header(answer, "content-type"))) {
      problems.push(`Content-Type ${header(answer, "content-type") ?? "absent"}, not JSON`);
    }
    problems.push(...jsonErrorBodyProblems(answer));
    if (problems.length > 0) {
      throw new Error(`${problems.join("; ")}\n  answer: ${describeAnswer(answer)}`);
    }
  }

  verifies(
    ["limits.client-error-json", "limits.no-5xx-for-requests"],
    "answers malformed HTTP with a 4xx JSON error carrying OXP-Version, never a silent close",
    async () => {
      const requests = malformedRequests().map((request) => printable(request, describeMalformed));
      await fc.assert(
        fc.asyncProperty(requests, (request) => expectRefusal(request)),
        // real time: fast-check's own hang guard, under the gate's 300 s, so that a hang names the property.
        { numRuns: 150, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
      );
      await expectHealthy(server.baseUrl, { "OXP-API-Key": API_KEY });
    },
  );
});
