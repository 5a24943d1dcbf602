/** CORS (the Fetch standard's protocol): a browser page served elsewhere may call the server, when its origin is allowed. */
import type { CorsOptions } from "./options.js";

/** The request headers a browser page may send. */
export const CORS_ALLOWED_HEADERS: readonly string[] = [
  "Content-Type",
  "OXP-Version",
  "OXP-API-Key",
  "Authorization",
  "traceparent",
  "tracestate",
  // The extensions' (docs/protocol.md 9): a page elsewhere, such as the Inspector, asks for them too.
  "OXP-Extensions",
  "Prefer",
  "Last-Event-ID",
];

/** The response headers a browser page may read. */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  "OXP-Version",
  "WWW-Authenticate",
  "Retry-After",
  "ETag",
  "traceparent",
  "OXP-Extensions",
  "Location",
  "Preference-Applied",
];

/** The methods a page may use; DELETE cancels a call (the tasks extension). */
export const CORS_METHODS: readonly string[] = ["GET", "HEAD", "POST", "DELETE"];

/** What CORS makes of a request: whether it is a preflight (answered 204 at once), and its answer's headers (a new object). */
export interface CorsVerdict {
  readonly preflight: boolean;
  readonly headers: Record<string, string>;
}

/** The CORS decision of a request, by its method and `Origin`. */
export type Cors = (method: string, origin: string | undefined) => CorsVerdict;

/**
 * The CORS decision for the `cors` option; undefined when CORS is off. Every `OPTIONS` request is a preflight. An
 * allowed origin is granted by name (`Vary: Origin`, as the grant depends on it), any origin by `*`; an origin not
 * allowed gets no grant, and the browser keeps the answer from its page.
 */
export function createCors(options: CorsOptions | undefined): Cors | undefined {
  if (!options) {
    return undefined;
  }
  const origins = options.origins === "*" ? undefined : [...options.origins];
  const methods = CORS_METHODS.join(",");
  const allowedHeaders = CORS_ALLOWED_HEADERS.join(",");
  const exposedHeaders = CORS_EXPOSED_HEADERS.join(",");
  const maxAge = String(options.maxAgeSeconds ?? 600);
  return (method, origin) => {
    const headers: Record<string, string> = {};
    if (origins === undefined) {
      headers["Access-Control-Allow-Origin"] = "*";
    } else {
      if (origin && origins.includes(origin)) {
        headers["Access-Control-Allow-Origin"] = origin;
      }
      headers.Vary = "Origin";
    }
    const preflight = method.toUpperCase() === "OPTIONS";
    if (preflight) {
      headers["Access-Control-Allow-Methods"] = methods;
      headers["Access-Control-Allow-Headers"] = allowedHeaders;
      if (maxAge) {
        headers["Access-Control-Max-Age"] = maxAge;
      }
    }
    headers["Access-Control-Expose-Headers"] = exposedHeaders;
    return { preflight, headers };
  };
}
