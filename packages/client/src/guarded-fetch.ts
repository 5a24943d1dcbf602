/** The client's way to the network: each request read once, redirects followed on its origin only, answers bounded. */
import { OxpCrossOriginError, OxpProtocolError, OxpResponseTooLargeError } from "./errors.js";

/** Redirects followed at most for one request, all of them on the server's origin. */
export const MAX_REDIRECTS = 5;

/** The default of the client's `maxResponseBytes`: 16 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Statuses whose answers carry no body (a Response cannot be made with one). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);
/** Headers that describe a body: dropped when a redirect turns the request into a GET (as fetch does). */
const BODY_HEADERS = ["content-type", "content-encoding", "content-language", "content-location"];

/** The origin of `url` (resolved against `base`), or undefined when it does not parse. */
export function originOf(url: string, base?: string): string | undefined {
  try {
    return new URL(url, base).origin;
  } catch {
    return undefined;
  }
}

/**
 * True when `url`, resolved against `base` the way the client resolves a challenge's check_url, has
 * the origin (scheme, host and port) of `base`. False for anything that does not parse, or that has
 * no origin (`data:`, `file:`): the caller then refuses, which is the safe way to be wrong.
 *
 * @example
 * sameOrigin("/authorization/challenges/x", "http://127.0.0.1:8080"); // true
 * sameOrigin("http://127.0.0.1:9999/x", "http://127.0.0.1:8080"); // false: another port
 */
export function sameOrigin(url: string, base: string): boolean {
  try {
    const origin = new URL(base).origin;
    return origin !== "null" && new URL(url, `${base.replace(/\/+$/, "")}/`).origin === origin;
  } catch {
    return false;
  }
}

/**
 * One request as the client sends it, its body read once: every send of it (a same-origin 307 or 308, a try with
 * another access token) carries these same bytes, which fetch writes with the headers rather than as a stream.
 */
export interface OutgoingRequest {
  url: string;
  method: string;
  headers: Headers;
  /** The body (the client's are small JSON documents), or undefined for none. */
  body: string | ArrayBuffer | undefined;
  signal: AbortSignal | undefined;
}

/** How the guard reaches the network: fetch's own arguments, so that no Request is built for it. */
export type SendRequest = (url: string, init: RequestInit) => Promise<Response>;

/**
 * What openapi-fetch builds for a request in place of a Request (its `Request` option): the URL and init it made. A
 * Request would cost its making (an AbortSignal of its own, a stream over the body) only to be read back at once.
 */
export class RequestDraft {
  readonly url: string;
  readonly method: string;
  readonly init: RequestInit;
  constructor(url: string, init: RequestInit = {}) {
    this.url = url;
    this.method = init.method ?? "GET";
    this.init = init;
  }
}

/**
 * `request` as an OutgoingRequest, its body read once (not copied): a Request is used up by it. A draft's string body
 * is taken as it is.
 */
export async function outgoingRequest(request: Request | RequestDraft): Promise<OutgoingRequest> {
  if (request instanceof RequestDraft) {
    const { body, headers, signal } = request.init;
    return {
      url: request.url,
      method: request.method,
      headers: new Headers(headers),
      body:
        body === undefined || body === null || typeof body === "string"
          ? (body ?? undefined)
          : await new Response(body).arrayBuffer(),
      signal: signal ?? undefined,
    };
  }
  return {
    url: request.url,
    method: request.method,
    headers: new Headers(request.headers),
    body: request.body === null ? undefined : await request.arrayBuffer(),
    signal: request.signal,
  };
}

/** Options of {@link guardedFetch}. */
export interface GuardOptions {
  /** The most bytes of an answer's body read (after any Content-Encoding is undone). */
  maxResponseBytes: number;
}

/**
 * Wraps `doFetch` so that a request (sent with `redirect: "manual"`) never leaves its own origin: a redirect on that
 * origin is followed (at most MAX_REDIRECTS; 307/308 send the method and body again, 303 and a POST's 301/302 become
 * a GET without body, as fetch does), and a redirect anywhere else is an OxpCrossOriginError, before anything is sent
 * there. A browser does not show where a redirect leads (an opaque redirect), so there every redirect is an
 * OxpCrossOriginError. The answer's body is cut off past `maxResponseBytes` with an OxpResponseTooLargeError, and
 * refused before reading when its Content-Length says it is longer.
 */
export function guardedFetch(doFetch: SendRequest, options: GuardOptions) {
  return async (first: OutgoingRequest): Promise<Response> => {
    const firstUrl = new URL(first.url);
    const { origin } = firstUrl;
    const what = `${first.method} ${firstUrl.pathname}`;
    let { url, method, headers } = first;
    // The body is bytes (or a string), never a stream: it is there again for a 307/308 on the same origin.
    let body = method === "GET" || method === "HEAD" ? undefined : first.body;
    for (let hops = 0; ; hops++) {
      const init: RequestInit = { method, headers, redirect: "manual" };
      if (body !== undefined) {
        init.body = body;
      }
      if (first.signal) {
        init.signal = first.signal;
      }
      const response = await doFetch(url, init);
      if (response.type === "opaqueredirect") {
        throw new OxpCrossOriginError(
          `${what} was answered with a redirect, which the client does not follow: the browser does not say where it leads, and credentials go to ${origin} only`,
          response.status,
          origin,
          undefined,
        );
      }
      const location = REDIRECT_STATUSES.has(response.status) ? response.headers.get("location") : null;
      if (location === null) {
        return bounded(response, options.maxResponseBytes);
      }
      await response.body?.cancel().catch(() => undefined);
      let target: URL;
      try {
        target = new URL(location, url);
      } catch {
        throw new OxpProtocolError(
          `${what} was redirected (${response.status}) to a Location that is no URL`,
          response.status,
        );
      }
      if (target.origin !== origin) {
        // Only the origin is named: a Location's path, query or user info may carry anything.
        throw new OxpCrossOriginError(
          `${what} was redirected (${response.status}) from ${origin} to ${target.origin}; the client follows redirects on the server's origin only, so neither its credentials nor the request's body went there`,
          response.status,
          origin,
          target.origin,
        );
      }
      if (hops >= MAX_REDIRECTS) {
        throw new OxpProtocolError(`${what} was redirected more than ${MAX_REDIRECTS} times`, response.status);
      }
      const status = response.status;
      const toGet =
        (method === "POST" && (status === 301 || status === 302)) ||
        (status === 303 && method !== "GET" && method !== "HEAD");
      // A copy: the headers given stay as they were, for a wrapper that sends the request again.
      headers = new Headers(headers);
      if (toGet) {
        for (const name of BODY_HEADERS) {
          headers.delete(name);
        }
        method = "GET";
        body = undefined;
      }
      url = target.href;
    }
  };
}

/** The answer, its body cut off with an OxpResponseTooLargeError once more than `limit` bytes came. */
function bounded(response: Response, limit: number): Response {
  if (response.status < 200 || response.status > 599) {
    // Response cannot hold such a status; and no OXP answer has one.
    response.body?.cancel().catch(() => undefined);
    throw new OxpProtocolError(
      `The server answered status ${response.status}, which is no final HTTP status`,
      response.status,
    );
  }
  if (response.body === null || NULL_BODY_STATUSES.has(response.status)) {
    return response;
  }
  const declared = response.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) {
    response.body.cancel().catch(() => undefined);
    throw new OxpResponseTooLargeError(response.status, limit);
  }
  const reader = response.body.getReader();
  let read = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const chunk = await reader.read();
      if (chunk.done) {
        controller.close();
        return;
      }
      read += chunk.value.byteLength;
      if (read > limit) {
        // Cancelling the source closes the connection: the rest is never read, decoded or kept.
        reader.cancel().catch(() => undefined);
        controller.error(new OxpResponseTooLargeError(response.status, limit));
        return;
      }
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
