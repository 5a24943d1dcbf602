// The CORS module against the `cors` package it replaced, driven as the pipeline drove it: the same headers, in the same order, for every option and request.
import corsMiddleware from "cors";
import { describe, expect, it } from "vitest";
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_METHODS, type CorsVerdict, createCors } from "./cors.js";
import type { CorsOptions } from "./options.js";

/** What the pipeline made of a request with the `cors` package: its middleware run on a request and answer of its own shape. */
function packageVerdict(options: CorsOptions, method: string, origin: string | undefined): CorsVerdict {
  const handler = corsMiddleware({
    origin: options.origins === "*" ? "*" : [...options.origins],
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: options.maxAgeSeconds ?? 600,
    optionsSuccessStatus: 204,
  });
  const headers: Record<string, string> = {};
  let preflight = false;
  const req = { method, headers: { origin, "access-control-request-method": "POST" } };
  const res = {
    statusCode: 200,
    getHeader: (name: string) => headers[name],
    setHeader: (name: string, value: string | number) => {
      headers[name] = String(value);
    },
    end: () => {
      preflight = true;
    },
  };
  handler(req as never, res as never, () => {});
  delete headers["Content-Length"];
  return { preflight, headers };
}

const OPTIONS: [string, CorsOptions][] = [
  ["any origin", { origins: "*" }],
  ["one origin", { origins: ["http://inspector.test"] }],
  ["two origins, no preflight cache", { origins: ["http://inspector.test", "https://app.test"], maxAgeSeconds: 0 }],
  ["no origin, a day's cache", { origins: [], maxAgeSeconds: 86_400 }],
];

const REQUESTS: [string, string, string | undefined][] = [
  ["a preflight from an allowed origin", "OPTIONS", "http://inspector.test"],
  ["a preflight from the second origin", "OPTIONS", "https://app.test"],
  ["a preflight from another origin", "OPTIONS", "http://elsewhere.test"],
  ["a preflight without Origin", "OPTIONS", undefined],
  ["a preflight in lower case", "options", "http://inspector.test"],
  ["a GET from an allowed origin", "GET", "http://inspector.test"],
  ["a POST from another origin", "POST", "http://elsewhere.test"],
  ["a DELETE without Origin", "DELETE", undefined],
  ["a HEAD with an empty Origin", "HEAD", ""],
  ["a GET from an origin that differs in case", "GET", "HTTP://INSPECTOR.TEST"],
];

describe("createCors", () => {
  it("is off without options", () => {
    expect(createCors(undefined)).toBeUndefined();
  });

  it("grants an allowed origin's preflight by name, with the methods and headers a page may use", () => {
    const cors = createCors({ origins: ["http://inspector.test"] });
    expect(cors?.("OPTIONS", "http://inspector.test")).toEqual({
      preflight: true,
      headers: {
        "Access-Control-Allow-Origin": "http://inspector.test",
        Vary: "Origin",
        "Access-Control-Allow-Methods": "GET,HEAD,POST,DELETE",
        "Access-Control-Allow-Headers":
          "Content-Type,OXP-Version,OXP-API-Key,Authorization,traceparent,tracestate,OXP-Extensions,Prefer,Last-Event-ID",
        "Access-Control-Max-Age": "600",
        "Access-Control-Expose-Headers":
          "OXP-Version,WWW-Authenticate,Retry-After,ETag,traceparent,OXP-Extensions,Location,Preference-Applied",
      },
    });
    expect(cors?.("GET", "http://elsewhere.test")).toEqual({
      preflight: false,
      headers: {
        Vary: "Origin",
        "Access-Control-Expose-Headers":
          "OXP-Version,WWW-Authenticate,Retry-After,ETag,traceparent,OXP-Extensions,Location,Preference-Applied",
      },
    });
  });

  for (const [optionsName, options] of OPTIONS) {
    describe(`with ${optionsName}`, () => {
      const cors = createCors(options);
      it.each(REQUESTS)("answers %s as the cors package did", (_name, method, origin) => {
        const want = packageVerdict(options, method, origin);
        const got = cors?.(method, origin);
        expect(got?.preflight).toBe(want.preflight);
        // In order too: the adapters write headers as they are listed.
        expect(Object.entries(got?.headers ?? {})).toEqual(Object.entries(want.headers));
      });
    });
  }

  it("gives each request a headers object of its own (tracing adds to it)", () => {
    const cors = createCors({ origins: "*" });
    expect(cors?.("GET", undefined).headers).not.toBe(cors?.("GET", undefined).headers);
  });
});
