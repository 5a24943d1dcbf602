// A property over raw sockets against the whole demo process (protocol routes and consent pages): every answer is safe (no 5xx, JSON errors, no stack or path, OXP-Version); malformed HTTP is the server's, in packages/server/test/malformed-http.test.ts.
import { gzipSync } from "node:zlib";
import {
  describeAnswer,
  escaped,
  header,
  isJson,
  jsonErrorBodyProblems,
  LEAK_PATTERNS,
  leaks,
  oxpVersionProblems,
  pick,
  printable,
  receive,
  shown,
  token,
  weighted,
} from "@otc/test-helpers/raw-http";
import { verifies } from "@otc/test-helpers/verifies";
import fc from "fast-check";
import { afterAll, beforeAll, describe } from "vitest";
import { callTool, expectHealthy, type Running, send, startDemo } from "./harness.js";

const API_KEY = "hostile-process-test-key";
const JWT_SECRET = "hostile-process-test-secret-of-enough-length-0123456789";

/** The only paths where the consent router's own plain-HTML error pages (400, 403, 404) are allowed. */
const CONSENT_PREFIX = "/demo/authorize/";

/** The path of a request target (origin- or absolute-form), without the query. */
function pathOf(target: string): string {
  const withoutOrigin = /^[a-z][a-z0-9+.-]*:\/\//i.test(target)
    ? target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?]*/i, "")
    : target;
  return withoutOrigin.split("?")[0] ?? "";
}

// ---------------------------------------------------------------------------------------------
// Requests: a model fast-check generates and shrinks, rendered to bytes at the last moment.

type Body =
  | { kind: "none" }
  | { kind: "text"; text: string }
  | { kind: "bytes"; bytes: Uint8Array }
  /** A Greeting.Hello call whose name makes the body `size` bytes (big bodies, kept out of printed counter-examples). */
  | { kind: "big"; size: number };

type Encoding = "none" | "identity" | "gzip-fake" | "gzip-real" | "bogus";

interface Request {
  method: string;
  target: string;
  version: "HTTP/1.1" | "HTTP/1.0";
  /** `null`: no Host header (only with HTTP/1.0, where Host is optional). */
  host: string | null;
  headers: [string, string][];
  encoding: Encoding;
  /** 0: Content-Length; otherwise Transfer-Encoding: chunked with chunks of this size. */
  chunkSize: number;
  body: Body;
}

function bodyBytes(body: Body): Buffer {
  switch (body.kind) {
    case "none":
      return Buffer.alloc(0);
    case "text":
      return Buffer.from(body.text, "utf8");
    case "bytes":
      return Buffer.from(body.bytes);
    case "big": {
      const shell = JSON.stringify({ tool_id: "Greeting.Hello", input: { name: "" } });
      return Buffer.from(shell.replace('"name":""', `"name":"${"x".repeat(Math.max(0, body.size - shell.length))}"`));
    }
  }
}

function render(request: Request): Buffer {
  let body = bodyBytes(request.body);
  const lines = [`${request.method} ${request.target} ${request.version}`];
  if (request.host !== null) {
    lines.push(`Host: ${request.host}`);
  }
  for (const [name, value] of request.headers) {
    lines.push(`${name}: ${value}`);
  }
  if (request.encoding === "gzip-real") {
    body = gzipSync(body);
  }
  if (request.encoding === "gzip-real" || request.encoding === "gzip-fake") {
    lines.push("Content-Encoding: gzip");
  }
  if (request.encoding === "identity") {
    lines.push("Content-Encoding: identity");
  }
  if (request.encoding === "bogus") {
    lines.push("Content-Encoding: bogus");
  }
  const chunked = request.chunkSize > 0 && request.version === "HTTP/1.1";
  lines.push(chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${body.length}`);
  lines.push("Connection: close");
  const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
  if (!chunked) {
    return Buffer.concat([head, body]);
  }
  const parts: Buffer[] = [head];
  for (let offset = 0; offset < body.length; offset += request.chunkSize) {
    const chunk = body.subarray(offset, offset + request.chunkSize);
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`, "latin1"), chunk, Buffer.from("\r\n", "latin1"));
  }
  parts.push(Buffer.from("0\r\n\r\n", "latin1"));
  return Buffer.concat(parts);
}

function describeBody(body: Body): string {
  switch (body.kind) {
    case "none":
      return "no body";
    case "text":
      return `body ${shown(body.text, 300)}`;
    case "bytes":
      return `${body.bytes.length} random bytes ${shown(Buffer.from(body.bytes).toString("latin1"), 120)}`;
    case "big":
      return `a Greeting.Hello call of ${body.size} bytes`;
  }
}

/** How a request prints in a counter-example: the request line, headers and a body summary. */
function describeRequest(request: Request): string {
  const headers = [
    ...(request.host === null ? [] : [`Host: ${request.host}`]),
    ...request.headers.map(([name, value]) => `${escaped(name)}: ${escaped(value)}`),
    ...(request.encoding === "none" ? [] : [`(Content-Encoding ${request.encoding})`]),
    ...(request.chunkSize > 0 && request.version === "HTTP/1.1" ? [`(chunked by ${request.chunkSize})`] : []),
  ];
  return `${request.method} ${shown(request.target, 300)} ${request.version} [${headers.join(" | ")}] ${describeBody(request.body)}`;
}

// ---------------------------------------------------------------------------------------------
// Generators.

/** Printable ASCII without space: what a header value or token is mostly made of. */
const visible = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code)) });
/** A header value: visible ASCII, inner spaces and tabs, and obs-text bytes. */
const headerValue = fc
  .array(
    weighted<string>(
      [8, fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code))],
      [1, pick(" ", "\t")],
      [1, fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code))],
    ),
    { maxLength: 80 },
  )
  .map((chars) => chars.join("").trim());
/** One path segment: ordinary characters, percent-encoding good and bad, dot segments, characters URLs forbid. */
const segment = fc
  .array(
    weighted<string>(
      [10, pick(..."abcdefghijklmnopqrstuvwxyz0123456789-._~")],
      [2, pick(..."!$&'()*+,;=:@")],
      [2, pick("%41", "%2F", "%2f", "%00", "%20", "%25", "%C3%A9", "%E2%82%AC", "%F0%9F%92%A9")],
      [2, pick("%", "%Z", "%ZZ", "%G0", "%C3", "%E0%A4", "%FF", "%C0%AF", "%ED%A0%80")],
      [1, pick("..", ".", "%2e%2e", "")],
      [1, pick(...'"<>\\^`{|}')],
      [1, fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code))],
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(""));

const query = weighted<string>(
  [4, fc.constant("")],
  [
    4,
    fc
      .array(fc.tuple(segment, segment), { maxLength: 5 })
      .map((pairs) => `?${pairs.map(([key, value]) => `${key}=${value}`).join("&")}`),
  ],
  [1, pick("?", "?&&&", "?a[b][c]=1", "?a=%ZZ", "?%", "?user_id=alice&user_id=bob", "??=?")],
  [1, fc.integer({ min: 100, max: 4_000 }).map((length) => `?q=${"q".repeat(length)}`)],
);

/** Request targets: the known routes, random and hostile ones, very long ones, odd forms. */
function targets(challengeIds: readonly string[]): fc.Arbitrary<string> {
  const id = weighted<string>([3, pick(...challengeIds)], [3, segment], [1, pick("", "..", "%ZZ", "%")]);
  const known = weighted<string>(
    [3, pick("/health", "/tools", "/tools/call", "/health/", "/tools/", "/tools/call/", "//health", "/TOOLS")],
    [3, id.map((value) => `/authorization/challenges/${value}`)],
    [5, id.map((value) => `/demo/authorize/${value}`)],
    [
      1,
      fc
        .tuple(
          pick("/demo/authorize", "/DEMO/authorize", "/demo/Authorize", "/demo//authorize", "/demo/authorize/x/y"),
          id,
        )
        .map(([prefix, value]) => `${prefix}/${value}`),
    ],
    [
      1,
      pick("/demo/authorize", "/demo/authorize/", "/demo", "/authorization/challenges", "/authorization/challenges/"),
    ],
  );
  const random = fc.array(segment, { minLength: 1, maxLength: 8 }).map((parts) => `/${parts.join("/")}`);
  const long = fc
    .tuple(
      pick("/", "/demo/authorize/", "/authorization/challenges/", "/tools/"),
      fc.integer({ min: 1_000, max: 8_000 }),
    )
    .map(([prefix, length]) => `${prefix}${"a/%41".repeat(Math.ceil(length / 5)).slice(0, length)}`);
  const path = weighted<string>([6, known], [3, random], [1, long]);
  return weighted<string>(
    [10, fc.tuple(path, query).map(([value, search]) => value + search)],
    [1, path.map((value) => `http://evil.example${value}`)],
    [1, pick("*")],
  );
}

/** Catalog tool ids in every spelling (bare, full version, major only, wrong case) and random ones. */
function toolIds(catalog: readonly string[]): fc.Arbitrary<string> {
  const spellings = catalog.flatMap((id) => {
    const [name = "", version = ""] = id.split("@");
    return [name, id, `${name}@${version.split(".")[0]}`, name.toLowerCase(), `${name}@9.9.9`];
  });
  return weighted<string>(
    [6, pick(...spellings)],
    [1, fc.string({ maxLength: 40 })],
    [
      1,
      pick("", "@", "Calculator.Add@", "Calculator.Add@01", "..", "Calculator.Add@1.0.0-beta", `${"A".repeat(300)}.B`),
    ],
  );
}

/** Inputs that fit a tool (with near misses at its bounds); `hostile` adds random JSON. System.Sleep waits at most 30 ms. */
function inputFor(toolId: string, hostile: boolean): fc.Arbitrary<unknown> {
  const name = toolId.split("@")[0];
  const fitting: Record<string, fc.Arbitrary<unknown>> = {
    "Calculator.Add": fc.record({ a: fc.double(), b: fc.double() }),
    "Doorbell.Ring": fc.record({ doorbell_id: fc.string() }),
    "System.GetTimestamp": fc.constant({}),
    "Gmail.GetEmails": fc.record({ query: fc.string() }, { requiredKeys: [] }),
    "SMS.Send": fc.record({ to: fc.string(), message: fc.string() }),
    "Greeting.Hello": fc.record(
      { name: fc.string(), language: pick("en", "fr", "es", "de") },
      { requiredKeys: ["name"] },
    ),
    "Counter.Increment": fc.record({ by: fc.integer({ min: -5, max: 1_000_001 }) }),
    "System.Sleep": fc.record({ ms: fc.integer({ min: -1, max: 30 }) }),
  };
  // Own keys only: a generated id such as `constructor` must not find Object.prototype's.
  const fits = name && Object.hasOwn(fitting, name) ? fitting[name] : undefined;
  if (fits && !hostile) {
    return fits;
  }
  return weighted<unknown>(
    [fits ? 6 : 0, fits ?? fc.constant({})],
    [2, fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 })],
    [1, fc.jsonValue({ maxDepth: 2 })],
  );
}

/** CallToolRequest-ish bodies: flat or enveloped, with context, call_id and trace_id sometimes. */
function callBodies(catalog: readonly string[]): fc.Arbitrary<unknown> {
  // Calls that resolve and pass the contract, so tools really run (idempotent replays included).
  const valid = fc
    .tuple(
      pick(...catalog),
      pick<"bare" | "full" | "major">("bare", "full", "major"),
      fc.option(pick("alice", "bob", "carol"), { nil: undefined }),
    )
    .chain(([id, spelling, userId]) => {
      const [name = "", version = ""] = id.split("@");
      const toolId = spelling === "bare" ? name : spelling === "full" ? id : `${name}@${version.split(".")[0]}`;
      return fc.record(
        {
          tool_id: fc.constant(toolId),
          input: inputFor(toolId, false),
          context: fc.constant(userId === undefined ? {} : { user_id: userId }),
          call_id: weighted<string>([3, fc.uuid()], [1, pick("call-1", "call-2", "call-3")]),
          trace_id: fc.uuid(),
        },
        { requiredKeys: ["tool_id", "input"] },
      );
    });
  const hostile = toolIds(catalog).chain((toolId) =>
    fc.record(
      {
        tool_id: fc.constant(toolId),
        input: inputFor(toolId, true),
        context: weighted<unknown>(
          [4, fc.record({ user_id: pick("alice", "bob", "", "u".repeat(300)) }, { requiredKeys: [] })],
          [1, fc.jsonValue({ maxDepth: 2 })],
        ),
        call_id: weighted<unknown>(
          [4, pick("call-1", "call-2", "call-3")],
          [1, fc.string()],
          [1, fc.jsonValue({ maxDepth: 1 })],
        ),
        trace_id: weighted<unknown>([3, fc.string({ maxLength: 40 })], [1, fc.integer()]),
        extra: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: ["tool_id"] },
    ),
  );
  const request = weighted<unknown>([3, valid], [2, hostile]);
  return weighted<unknown>(
    [6, request],
    [
      2,
      fc.record(
        { $schema: pick("urn:oxp:1.0", "urn:oxp:2.0", "otc://1.0", "https://x/1.0/openapi.json", "nope"), request },
        { requiredKeys: ["request"] },
      ),
    ],
    [1, request.map((value) => ({ request: value, extra: true }))],
  );
}

interface Challenge {
  id: string;
  csrf: string;
}

/** Consent-form bodies: an action and a token (the right one, another challenge's, random or none). */
function formBodies(pool: readonly Challenge[]): fc.Arbitrary<string> {
  const csrf = weighted<string | undefined>(
    [3, pick(...pool.map((challenge) => challenge.csrf))],
    [1, visible],
    [1, fc.constant(undefined)],
    [1, pick("", "%ZZ", "a".repeat(2_000))],
  );
  const action = weighted<string | undefined>(
    [4, pick("approve", "deny")],
    [1, fc.string({ maxLength: 10 })],
    [1, fc.constant(undefined)],
  );
  return fc
    .tuple(action, csrf, fc.array(fc.tuple(token, segment), { maxLength: 3 }), fc.boolean())
    .map(([act, token, extras, csrfFirst]) => {
      const fields = [
        ...(act === undefined ? [] : [`action=${encodeURIComponent(act)}`]),
        ...(token === undefined ? [] : [`csrf=${token}`]),
      ];
      if (csrfFirst) {
        fields.reverse();
      }
      return [...fields, ...extras.map(([key, value]) => `${key}=${value}`)].join("&");
    });
}

function bodies(catalog: readonly string[], pool: readonly Challenge[]): fc.Arbitrary<Body> {
  return weighted<Body>(
    [3, fc.constant({ kind: "none" })],
    [6, callBodies(catalog).map((value) => ({ kind: "text", text: JSON.stringify(value) }))],
    [2, fc.jsonValue().map((value) => ({ kind: "text", text: JSON.stringify(value) ?? "null" }))],
    [2, fc.string({ maxLength: 200 }).map((text) => ({ kind: "text", text }))],
    [2, fc.uint8Array({ maxLength: 2_000 }).map((bytes) => ({ kind: "bytes", bytes }))],
    [3, formBodies(pool).map((text) => ({ kind: "text", text }))],
    [
      1,
      fc
        .integer({ min: 2, max: 3_000 })
        .map((depth) => ({ kind: "text", text: `${"[".repeat(depth)}${"]".repeat(depth)}` })),
    ],
    [1, pick(900_000, 1_048_576, 1_200_000).map((size) => ({ kind: "big", size }))],
  );
}

interface HeaderChoices {
  contentType: fc.Arbitrary<string | undefined>;
  auth: fc.Arbitrary<[string, string][]>;
}

function headerChoices(): HeaderChoices {
  return {
    contentType: weighted<string | undefined>(
      [
        8,
        pick(
          "application/json",
          "application/json; charset=utf-8",
          "application/json; charset=utf-16",
          "application/json;charset=latin1",
          "APPLICATION/JSON",
          "text/plain",
          "application/x-www-form-urlencoded",
          "application/x-www-form-urlencoded; charset=utf-16",
          "multipart/form-data; boundary=x",
          "application/jsonx",
          "*/*",
        ),
      ],
      [2, fc.constant(undefined)],
      [1, headerValue],
    ),
    auth: weighted<[string, string][]>(
      [5, fc.constant([["OXP-API-Key", API_KEY]])],
      [2, fc.constant([["Authorization", `Bearer ${API_KEY}`]])],
      [2, fc.constant([])],
      [
        3,
        fc
          .tuple(
            pick("OXP-API-Key", "Authorization", "oxp-api-key"),
            weighted<string>(
              [2, headerValue],
              [1, visible.map((value) => `Bearer ${value}`)],
              [1, pick("Bearer", "Bearer ", "Basic Zm9vOmJhcg==", `Bearer ${"a".repeat(4_000)}`)],
              [
                1,
                pick(
                  "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
                  "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwiZXhwIjo5OTk5OTk5OTk5fQ.",
                  "Bearer a.b.c",
                  "Bearer ...",
                  "Bearer eyJ9.eyJ9.eyJ9",
                ),
              ],
            ),
          )
          .map(([name, value]) => [[name, value]] as [string, string][]),
      ],
    ),
  };
}

/** Any header a client may send, mostly sensible values, often hostile ones. */
function headerLists(): fc.Arbitrary<[string, string][]> {
  const { contentType, auth } = headerChoices();
  const optional = (name: string, values: fc.Arbitrary<string | undefined>) =>
    values.map((value): [string, string][] => (value === undefined ? [] : [[name, value]]));
  return fc
    .tuple(
      optional("Content-Type", contentType),
      auth,
      optional(
        "OXP-Version",
        weighted<string | undefined>(
          [3, fc.constant(undefined)],
          [3, pick("1.0", " 1.0 ", "2.0", "0.9", "1.0, 1.0", "1")],
          [1, headerValue],
        ),
      ),
      optional(
        "Expect",
        weighted<string | undefined>(
          [6, fc.constant(undefined)],
          [2, pick("100-continue")],
          [1, pick("200-ok", "bogus")],
        ),
      ),
      optional(
        "Accept",
        weighted<string | undefined>([3, fc.constant(undefined)], [1, pick("text/html", "application/xml", "*/*")]),
      ),
      optional(
        "traceparent",
        weighted<string | undefined>(
          [4, fc.constant(undefined)],
          [
            1,
            pick(
              "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
              "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            ),
          ],
          [1, headerValue],
        ),
      ),
      fc.array(fc.tuple(token, headerValue), { maxLength: 3 }),
    )
    .map((groups) => groups.flat());
}

/** Headers a well-behaved client sends. */
function benignHeaders(): fc.Arbitrary<[string, string][]> {
  return fc
    .record(
      {
        "OXP-Version": fc.constant("1.0"),
        Expect: fc.constant("100-continue"),
        Accept: pick("application/json", "*/*"),
        traceparent: fc.constant("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        "User-Agent": fc.constant("hostile-process-test"),
      },
      { requiredKeys: [] },
    )
    .map((headers) => Object.entries(headers));
}

/** Anything at all: method, target, headers and body chosen independently. */
function anyRequests(catalog: readonly string[], pool: readonly Challenge[], host: string): fc.Arbitrary<Request> {
  return fc.record({
    method: weighted<string>(
      [10, pick("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")],
      [1, pick("FOO", "get", "Post", "PROPFIND", "M-SEARCH", "PURGE", "QUERY", "TRACE", "SEARCH")],
    ),
    target: targets(pool.map((challenge) => challenge.id)),
    version: weighted<"HTTP/1.1" | "HTTP/1.0">([6, fc.constant("HTTP/1.1")], [1, fc.constant("HTTP/1.0")]),
    host: weighted<string>([8, fc.constant(host)], [1, pick("evil.example", "localhost:1", "[::1]:80")]),
    headers: headerLists(),
    encoding: weighted<Encoding>([8, fc.constant("none")], [1, pick("gzip-fake", "gzip-real", "bogus", "identity")]),
    chunkSize: weighted<number>([5, fc.constant(0)], [1, fc.integer({ min: 1, max: 70_000 })]),
    body: bodies(catalog, pool),
  });
}

/** Tool calls that mostly get through to the core: POST /tools/call, JSON, often authenticated. */
function callRequests(catalog: readonly string[], pool: readonly Challenge[], host: string): fc.Arbitrary<Request> {
  return fc.record({
    method: fc.constant("POST"),
    target: weighted<string>(
      [8, fc.constant("/tools/call")],
      [1, pick("/tools/call?x=1", "/tools/call/", "/TOOLS/CALL")],
    ),
    version: weighted<"HTTP/1.1" | "HTTP/1.0">([6, fc.constant("HTTP/1.1")], [1, fc.constant("HTTP/1.0")]),
    host: fc.constant(host),
    headers: fc
      .tuple(
        weighted<[string, string][]>(
          [8, fc.constant([["Content-Type", "application/json"]])],
          [1, headerChoices().contentType.map((value) => (value === undefined ? [] : [["Content-Type", value]]))],
        ),
        weighted<[string, string][]>([6, fc.constant([["OXP-API-Key", API_KEY]])], [1, headerChoices().auth]),
        weighted<[string, string][]>([3, benignHeaders()], [1, headerLists()]),
      )
      .map(([type, auth, more]) => [
        ...type,
        ...auth,
        ...more.filter(([name]) => !/^(content-type|oxp-api-key|authorization)$/i.test(name)),
      ]),
    encoding: weighted<Encoding>([10, fc.constant("none")], [1, pick("gzip-fake", "gzip-real", "bogus")]),
    chunkSize: weighted<number>([5, fc.constant(0)], [1, fc.integer({ min: 1, max: 4_096 })]),
    body: weighted<Body>(
      [12, callBodies(catalog).map((value) => ({ kind: "text", text: JSON.stringify(value) }))],
      [1, bodies(catalog, pool)],
    ),
  });
}

/** The consent pages of live challenges: GET them, POST forms with the right token or a wrong one. */
function consentRequests(pool: readonly Challenge[], host: string): fc.Arbitrary<Request> {
  return fc
    .record({
      method: weighted<string>(
        [4, pick("POST")],
        [2, pick("GET", "HEAD")],
        [1, pick("PUT", "DELETE", "OPTIONS", "PATCH")],
      ),
      index: fc.nat({ max: pool.length - 1 }),
      ownToken: fc.boolean(),
      form: formBodies(pool),
      contentType: weighted<string | undefined>(
        [6, fc.constant("application/x-www-form-urlencoded")],
        [1, headerChoices().contentType],
      ),
      headers: headerLists(),
      encoding: weighted<Encoding>([10, fc.constant("none")], [1, pick("gzip-fake", "gzip-real", "bogus", "identity")]),
      chunkSize: weighted<number>([5, fc.constant(0)], [1, fc.integer({ min: 1, max: 64 })]),
      suffix: weighted<string>([6, fc.constant("")], [1, pick("/", "?a=1", "/x", "%20", "?csrf=x")]),
    })
    .map(({ index, ownToken, form, contentType, headers, suffix, ...rest }): Request => {
      const challenge = pool[index] as Challenge;
      // With the challenge's own token in place of whatever token the form drew.
      const text = ownToken ? form.replace(/csrf=[^&]*/, `csrf=${challenge.csrf}`) : form;
      return {
        ...rest,
        target: `/demo/authorize/${encodeURIComponent(challenge.id)}${suffix}`,
        version: "HTTP/1.1",
        host,
        headers: [
          ...(contentType === undefined ? [] : ([["Content-Type", contentType]] as [string, string][])),
          ...headers.filter(([name]) => name.toLowerCase() !== "content-type"),
        ],
        body: { kind: "text", text },
      };
    });
}

/** True if the request itself holds text the leak rules look for (the server may echo it back harmlessly). */
function holdsLeakPattern(request: Request): boolean {
  const text = render({ ...request, encoding: request.encoding === "gzip-real" ? "none" : request.encoding }).toString(
    "latin1",
  );
  return LEAK_PATTERNS.some((pattern) => pattern.test(text));
}

// ---------------------------------------------------------------------------------------------

describe("the whole demo process under hostile requests over raw sockets", () => {
  let server: Running;
  let port: number;
  let host: string;
  let catalog: string[];
  const pool: Challenge[] = [];

  beforeAll(async () => {
    server = await startDemo({ auth: { apiKeys: [API_KEY], jwt: { secret: JWT_SECRET } } });
    const url = new URL(server.baseUrl);
    port = Number(url.port);
    host = url.host;
    const listed = await send(`${server.baseUrl}/tools`, { headers: { "OXP-API-Key": API_KEY } });
    catalog = (listed.body.items as { id: string }[]).map((tool) => tool.id);
    // Live challenges, their consent pages' anti-CSRF tokens read off the pages as a browser would.
    for (let index = 0; index < 6; index++) {
      const reply = await callTool(
        server.baseUrl,
        { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: `pool-user-${index}` } },
        { "OXP-API-Key": API_KEY },
      );
      const id = reply.body.missing_requirements.authorization[0].id as string;
      const page = await send(`${server.baseUrl}/demo/authorize/${encodeURIComponent(id)}`);
      const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1];
      if (!csrf) {
        throw new Error(`no anti-CSRF token on the consent page of ${id}`);
      }
      pool.push({ id, csrf });
    }
  });
  afterAll(() => server?.close());

  /** Every kind of request property 1 sends. */
  function wellFormedRequests(): fc.Arbitrary<Request> {
    return weighted<Request>(
      [5, anyRequests(catalog, pool, host)],
      [3, callRequests(catalog, pool, host)],
      [2, consentRequests(pool, host)],
      // HTTP/1.0 has no Host requirement: a request without one is well formed and gets the same answers.
      [
        1,
        anyRequests(catalog, pool, host).map((request): Request => ({ ...request, version: "HTTP/1.0", host: null })),
      ],
    )
      .filter((request) => !holdsLeakPattern(request))
      .map((request) => printable(request, describeRequest));
  }

  /** Property 1: the answer to a well-formed (or merely odd) request breaks none of the rules. */
  async function expectSafeAnswer(request: Request): Promise<void> {
    const answer = await receive(port, render(request), request.method === "HEAD");
    const problems = [...oxpVersionProblems(answer), ...leaks(answer)];
    if (answer.status >= 500) {
      problems.push(`a ${answer.status}`);
    }
    if (answer.status >= 400) {
      const contentType = header(answer, "content-type");
      const consentPage =
        [400, 403, 404].includes(answer.status) &&
        pathOf(request.target).startsWith(CONSENT_PREFIX) &&
        /^text\/html\s*(;|$)/i.test(contentType ?? "");
      if (!consentPage && !isJson(contentType)) {
        problems.push(`an error answered as ${contentType ?? "no Content-Type"}, not JSON`);
      }
      if (isJson(contentType) && request.method !== "HEAD") {
        problems.push(...jsonErrorBodyProblems(answer));
      }
    }
    if (problems.length > 0) {
      throw new Error(`${problems.join("; ")}\n  answer: ${describeAnswer(answer)}`);
    }
  }

  verifies(
    ["limits.no-5xx-for-requests", "endpoints.error-json", "endpoints.oxp-version-header"],
    "answers any request safely: no 5xx, JSON errors, no stack or path, OXP-Version 1.0 always",
    async () => {
      const requests = wellFormedRequests();

      await fc.assert(
        fc.asyncProperty(requests, (request) => expectSafeAnswer(request)),
        // real time: fast-check's own hang guard, under the gate's 300 s, so that a hang names the property.
        { numRuns: 300, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
      );
      await expectHealthy(server.baseUrl, { "OXP-API-Key": API_KEY });
    },
  );
});
