/** The client's way to the network: redirects followed on the server's origin only, answers read up to a byte limit. */
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

/** Options of {@link guardedFetch}. */
export interface GuardOptions {
  /** The most bytes of an answer's body read (after any Content-Encoding is undone). */
  maxResponseBytes: number;
}

/**
 * Wraps `doFetch` so that a request (made with `redirect: "manual"`) never leaves its own origin: a
 * redirect on that origin is followed (at most MAX_REDIRECTS; 307/308 send the method and body again,
 * 303 and a POST's 301/302 become a GET without body, as fetch does), and a redirect anywhere else is
 * an OxpCrossOriginError, before anything is sent there. A browser does not show where a redirect leads
 * (an opaque redirect), so there every redirect is an OxpCrossOriginError. The answer's body is cut off
 * past `maxResponseBytes` with an OxpResponseTooLargeError, and refused before reading when its
 * Content-Length says it is longer.
 */
export function guardedFetch(doFetch: (request: Request) => Promise<Response>, options: GuardOptions) {
  return async (first: Request): Promise<Response> => {
    const origin = new URL(first.url).origin;
    const what = `${first.method} ${new URL(first.url).pathname}`;
    // Kept for a 307/308 on the same origin; the bodies the client sends are small JSON documents.
    const body = first.body ? await first.clone().arrayBuffer() : undefined;
    let request = first;
    for (let hops = 0; ; hops++) {
      const response = await doFetch(request);
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
        target = new URL(location, request.url);
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
        (request.method === "POST" && (status === 301 || status === 302)) ||
        (status === 303 && request.method !== "GET" && request.method !== "HEAD");
      const headers = new Headers(request.headers);
      if (toGet) {
        for (const name of BODY_HEADERS) {
          headers.delete(name);
        }
      }
      request = new Request(target, {
        method: toGet ? "GET" : request.method,
        headers,
        body: toGet || request.method === "GET" || request.method === "HEAD" ? null : (body ?? null),
        signal: request.signal,
        redirect: "manual",
      });
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
