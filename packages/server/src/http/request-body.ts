/** A call body's framing and reading rules: the size limit, the media type and charset, and the JSON parse (413, 415, 400). */
import bytes from "bytes";
import { ServerConfigError, WireError } from "../core/errors.js";
import type { Exchange } from "./exchange.js";

const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** The largest body an adapter reads, in bytes, from the `bodyLimit` option (a number or a size such as `"1mb"`). */
export function bodyLimitBytes(option: number | string | undefined): number {
  const limit = option === undefined ? DEFAULT_BODY_LIMIT : typeof option === "string" ? bytes.parse(option) : option;
  if (limit === null || !(Number.isFinite(limit) && limit >= 0)) {
    throw new ServerConfigError("bodyLimit must be a number of bytes or a size such as '1mb'");
  }
  return limit;
}

/** The 413 for a body past `limit`; the connection closes, so what is left of the body is never read. */
export function bodyTooLarge(limit: number): WireError {
  return new WireError("payload_too_large", "The request body is too large", {
    developerMessage: `The limit is ${limit} bytes.`,
    headers: { Connection: "close" },
  });
}

/** The spec declares one media type for request bodies: application/json, parameters (charset) allowed. */
export const isJsonType = (contentType: string | undefined) =>
  contentType === "application/json" ||
  (contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType.trim()));

/**
 * The checks of a call body's framing before it is read: a declared length past the limit is a 413 at once
 * (nothing is read), and a body other than UTF-8 JSON without `Content-Encoding` is a 415. Returns the declared
 * length (NaN without one).
 */
export function checkBodyFraming(exchange: Exchange, limit: number, contentType = ""): number {
  const declared = Number(exchange.header("content-length"));
  if (declared > limit) {
    throw bodyTooLarge(limit);
  }
  const encoding = exchange.header("content-encoding")?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    throw new WireError("unsupported_media_type", "The request body's encoding is not supported", {
      developerMessage: "Send the body without Content-Encoding.",
    });
  }
  // Parameters follow a semicolon: without one there is no charset to read.
  const charset = contentType.includes(";")
    ? /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1]?.toLowerCase()
    : undefined;
  if (charset !== undefined && charset !== "utf-8") {
    throw new WireError("unsupported_media_type", "The request body's encoding is not supported", {
      developerMessage: "Send the body as UTF-8 JSON (charset=utf-8, or no charset).",
    });
  }
  return declared;
}

/** Parses a JSON body (any JSON value; a leading BOM tolerated); 400 when it is empty or not JSON. */
export function parseJson(text: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch (error) {
    if (/^\s*$/.test(body)) {
      throw new WireError("bad_request", "The request has no body", { developerMessage: "Send a CallToolRequest." });
    }
    throw new WireError("bad_request", "The request body is not valid JSON", { cause: error });
  }
}
