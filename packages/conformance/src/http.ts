/** The kit's HTTP: raw requests (any method, headers and body, as draft clients send them), bounded in time and size, to one origin only. */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { StringDecoder } from "node:string_decoder";

/** An answer, body kept as text and parsed as JSON when it is JSON. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  json: unknown;
  /** The request that got this answer, for messages. */
  label: string;
  /** The URL the request went to, its query included. */
  url: string;
  /** The request's `OXP-Extensions` header; undefined when it sent none. */
  askedExtensions: string | undefined;
}

/** One request. */
export interface Send {
  method?: string;
  path?: string;
  /** A full URL instead of `path` (a challenge's check_url); it must be on the server under test. */
  url?: string;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
  timeoutMs?: number;
  /**
   * Reads a streamed body only until this says what was read is enough (an event stream's first events), then
   * hangs up: the answer holds what was read. It is given each decoded piece as it comes, never the whole text
   * again, so that a body cut finely costs its length, not its length times its pieces.
   */
  until?: (piece: string) => boolean;
}

/** The most of an answer the kit reads: past it the request fails, so a server cannot fill the kit's memory. */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Sends requests to one server, never elsewhere, each bounded in time; keeps every answer for global checks. */
export class Http {
  readonly origin: string;
  readonly answers: Answer[] = [];

  constructor(
    readonly baseUrl: string,
    private readonly credentials: () => Promise<Record<string, string>>,
    private readonly defaultTimeoutMs = 10_000,
    private readonly maxAnswerBytes = MAX_ANSWER_BYTES,
  ) {
    this.origin = new URL(baseUrl).origin;
  }

  /** Sends with the configured credentials (unless `anonymous`). */
  async send(options: Send, anonymous = false): Promise<Answer> {
    const headers = { ...(anonymous ? {} : await this.credentials()), ...options.headers };
    return this.raw({ ...options, headers });
  }

  /** Sends exactly the given headers: no credentials, no defaults. */
  raw(options: Send): Promise<Answer> {
    const url = new URL(options.url ?? `${this.baseUrl.replace(/\/+$/, "")}${options.path ?? "/"}`);
    if (url.origin !== this.origin) {
      return Promise.reject(new Error(`refusing to send to ${url.origin}: only ${this.origin} is under test`));
    }
    const body =
      options.body === undefined
        ? undefined
        : typeof options.body === "string"
          ? options.body
          : JSON.stringify(options.body);
    const method = options.method ?? "GET";
    const label = `${method} ${url.pathname}`;
    const askedExtensions = Object.entries(options.headers ?? {}).find(
      ([name]) => name.toLowerCase() === "oxp-extensions",
    )?.[1];
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        url,
        {
          method,
          headers: {
            ...(body !== undefined ? { "content-length": String(Buffer.byteLength(body)) } : {}),
            ...options.headers,
          },
          timeout: options.timeoutMs ?? this.defaultTimeoutMs,
        },
        (res) => {
          const pieces: string[] = [];
          const decoder = new StringDecoder("utf8");
          let size = 0;
          let done = false;
          const finish = () => {
            if (done) {
              return;
            }
            done = true;
            pieces.push(decoder.end());
            const text = pieces.join("");
            let json: unknown;
            try {
              json = text === "" ? undefined : JSON.parse(text);
            } catch {
              json = undefined;
            }
            const answer: Answer = {
              status: res.statusCode ?? 0,
              headers: res.headers,
              text,
              json,
              label,
              url: url.href,
              askedExtensions,
            };
            this.answers.push(answer);
            resolve(answer);
          };
          res.on("data", (chunk: Buffer) => {
            if (done) {
              return;
            }
            size += chunk.length;
            if (size > this.maxAnswerBytes) {
              done = true;
              req.destroy();
              reject(new Error(`${label}: the answer is longer than ${this.maxAnswerBytes} bytes`));
              return;
            }
            const piece = decoder.write(chunk);
            pieces.push(piece);
            if (options.until?.(piece)) {
              finish();
              req.destroy();
            }
          });
          res.on("end", finish);
          res.on("error", (error) => {
            if (!done) {
              reject(error);
            }
          });
        },
      );
      req.on("timeout", () =>
        req.destroy(new Error(`${label}: no answer within ${options.timeoutMs ?? this.defaultTimeoutMs} ms`)),
      );
      req.on("error", reject);
      if (body !== undefined) {
        req.write(body);
      }
      req.end();
    });
  }
}

/** A header's value as one string. */
export const header = (answer: Answer, name: string): string | undefined => {
  const value = answer.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(", ") : value;
};
