/** A node:http request as the pipeline's exchange, and the writing of its answer: what the node:http and Express adapters share. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { pipeline, Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { Answer, Exchange } from "./exchange.js";
import { bodyTooLarge } from "./request-body.js";
import { requestPath } from "./routes.js";
import { queryOf } from "./url.js";

/** A handler in the node style (an Express app or router fits): `next()` when it does not serve the request. */
export type PageHandler = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** A node:http request and its response, seen by the pipeline. */
export class NodeExchange implements Exchange {
  readonly method: string;
  readonly path: string | undefined;
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** Where the app is mounted (Express's `req.baseUrl`), for the base URL. */
    private readonly mountPath = "",
    private readonly pages?: readonly PageHandler[],
  ) {
    this.method = req.method ?? "GET";
    this.path = requestPath(req.url ?? "/");
  }
  query(): string {
    return queryOf(this.req.url ?? "");
  }
  header(name: string): string | undefined {
    const value = this.req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  }
  headers(): Readonly<Record<string, string | undefined>> {
    const all: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(this.req.headers)) {
      all[name] = Array.isArray(value) ? value.join(",") : value;
    }
    return all;
  }
  hostHeaders(): number {
    let hosts = 0;
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i]?.length === 4 && raw[i]?.toLowerCase() === "host") {
        hosts++;
      }
    }
    // HTTP/1.0 may omit Host: it counts as one there.
    return hosts === 0 && this.req.httpVersion === "1.0" ? 1 : hosts;
  }
  get localAddress(): string | undefined {
    return this.req.socket.localAddress;
  }
  get remoteAddress(): string | undefined {
    return this.req.socket.remoteAddress;
  }
  get connection(): object {
    return this.req.socket;
  }
  baseUrl(): string {
    return `${localOrigin(this.req.socket)}${this.mountPath}`;
  }
  readText(limit: number, declared: number, inspect: (piece: string, whole: boolean) => void): Promise<string> {
    return readText(this.req, { limit, declared }, inspect);
  }
  watchClient(onGone: () => void): () => void {
    const res = this.res;
    if (res.destroyed) {
      // Gone before the run began: its `close` has passed.
      queueMicrotask(onGone);
      return () => {};
    }
    const listener = () => {
      if (!res.writableFinished) {
        onGone();
      }
    };
    res.once("close", listener);
    return () => res.off("close", listener);
  }
  toRequest(): Request {
    const { req } = this;
    const url = /^https?:\/\//i.test(req.url ?? "")
      ? (req.url as string)
      : `${localOrigin(req.socket)}${req.url ?? "/"}`;
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
        headers.append(name, one);
      }
    }
    const bodyless = this.method === "GET" || this.method === "HEAD";
    return new Request(url, {
      method: this.method,
      headers,
      ...(bodyless ? {} : { body: Readable.toWeb(req) as ReadableStream, duplex: "half" }),
    } as RequestInit);
  }
  hostPages(headers: Record<string, string>): Promise<boolean> {
    const pages = this.pages ?? [];
    if (pages.length === 0) {
      return Promise.resolve(false);
    }
    const { req, res } = this;
    for (const [name, value] of Object.entries(headers)) {
      res.setHeader(name, value);
    }
    return new Promise((resolve, reject) => {
      let index = 0;
      const next = (error?: unknown) => {
        if (error !== undefined && error !== null) {
          reject(error);
          return;
        }
        const page = pages[index++];
        if (!page) {
          resolve(false);
          return;
        }
        // Each page may pass the request on once; an async page's rejection is its error.
        let passed = false;
        const once = (failure?: unknown) => {
          if (passed) {
            return;
          }
          passed = true;
          next(failure);
        };
        try {
          const result: unknown = page(req, res, once);
          if (result instanceof Promise) {
            result.catch((thrown: unknown) => once(thrown ?? new Error("page failed")));
          }
        } catch (thrown) {
          once(thrown ?? new Error("page failed"));
        }
      };
      // A page that answers never calls `next`: done once its answer is.
      res.once("close", () => resolve(true));
      next();
    });
  }
}

/** `http://address:port` of the socket's local end: where this server was reached, whatever `Host` says. */
export function localOrigin(socket: Socket): string {
  const address = (socket.localAddress ?? "127.0.0.1").replace(/^::ffff:(?=\d+\.)/, "");
  return `http://${address.includes(":") ? `[${address}]` : address}:${socket.localPort}`;
}

/**
 * Reads a request body up to `limit` bytes, each chunk decoded and inspected as it comes (a body that comes in one
 * chunk of its declared length is decoded once, as a whole): past the limit, or when `inspect` throws, the rest is
 * never read (the request is paused; the answer closes the connection).
 */
function readText(
  req: IncomingMessage,
  size: { limit: number; declared: number },
  inspect: (piece: string, whole: boolean) => void,
): Promise<string> {
  const { limit, declared } = size;
  return new Promise((resolve, reject) => {
    let text = "";
    let decoder: StringDecoder | undefined;
    let read = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const refuse = (error: unknown) => {
      cleanup();
      req.pause();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      const whole = read === 0 && chunk.length === declared;
      read += chunk.length;
      if (read > limit) {
        refuse(bodyTooLarge(limit));
        return;
      }
      if (!whole) {
        // A chunk may end inside a character: the decoder keeps its first bytes for the next one.
        decoder ??= new StringDecoder("utf8");
      }
      const piece = decoder ? decoder.write(chunk) : chunk.toString("utf8");
      try {
        inspect(piece, whole);
      } catch (error) {
        refuse(error);
        return;
      }
      text += piece;
    };
    // Nothing follows `end`: the listeners go with the request, unremoved.
    const onEnd = () => {
      resolve(decoder ? text + decoder.end() : text);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/** Writes the pipeline's answer: a JSON answer in one `writeHead` and one `end`, or a page's `Response`, streamed. */
export function writeAnswer(res: ServerResponse, answer: Answer): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const { response, headers } = answer;
  if (response) {
    writeResponse(res, response);
    return;
  }
  const body = answer.body;
  if (body !== undefined) {
    headers["Content-Length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.length);
  }
  res.writeHead(answer.status, headers);
  res.end(body);
}

function writeResponse(res: ServerResponse, response: Response): void {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) {
    headers["set-cookie"] = cookies;
  }
  res.writeHead(response.status, headers);
  if (!response.body || res.req.method === "HEAD") {
    res.end();
    response.body?.cancel().catch(() => {});
    return;
  }
  // pipeline, not pipe: a client that goes away cancels the body (an event stream stops, and is counted closed).
  pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream), res, () => {});
}
