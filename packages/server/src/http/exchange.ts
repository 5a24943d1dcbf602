/** What an adapter hands the pipeline (an {@link Exchange}: one request, as its host sees it) and what it gets back (an {@link Answer}). */

/**
 * One request as an adapter hands it to the pipeline: what every host provides, and three members only a host that
 * owns its connections has (node:http and Express: the fetch hosts parse the request themselves and tell none).
 */
export interface Exchange {
  /** The method, upper case as sent. */
  readonly method: string;
  /** The target's path below the mount point, query dropped; undefined when the target names no path. */
  readonly path: string | undefined;
  /** The target's query, without its `?` (and without a fragment): empty when there is none. */
  query(): string;
  /** A header's value (the name in lower case), the first of several. */
  header(name: string): string | undefined;
  /** Every header, names in lower case: what a trace propagator may read. Asked only when tracing. */
  headers(): Readonly<Record<string, string | undefined>>;
  /** The address the request arrived on, when the host knows it. */
  readonly localAddress: string | undefined;
  /** The client's address, when the host knows it. */
  readonly remoteAddress: string | undefined;
  /** Where the server was reached, scheme to port plus any mount path: the base of check URLs without `publicUrl`. */
  baseUrl(): string;
  /**
   * Reads the body as UTF-8 text, handing each decoded piece to `inspect` as it comes (which throws to refuse the
   * rest), `whole` when the piece is the entire body; rejects with `bodyTooLarge` past `limit` bytes, leaving
   * the rest unread. `declared` is the request's Content-Length as the pipeline read it (NaN without one).
   */
  readText(limit: number, declared: number, inspect: (piece: string, whole: boolean) => void): Promise<string>;
  /** Calls `onGone` if the client goes away before the answer is written; returns the function that stops watching. */
  watchClient(onGone: () => void): () => void;
  /** The request as a fetch `Request`, for the fetch pages (made only for a path no protocol route serves). */
  toRequest(): Request;
  /**
   * How many `Host` headers the request carried (RFC 9112 3.2 wants exactly one; HTTP/1.0's missing one counts as
   * one). Absent: the host kept exactly one, refusing a repeated one itself.
   */
  hostHeaders?(): number;
  /** An object living as long as the connection (where the Host check remembers its verdict), when there is one. */
  readonly connection?: object;
  /** The host's own pages (node-style handlers), tried before the fetch pages; true once one answered. `headers` go on its answer. */
  hostPages?(headers: Record<string, string>): Promise<boolean>;
}

/** What the pipeline answers: a JSON answer (`body` text, or bytes of the gzipped tool list), or a page's `Response`. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** A page's answer; `headers` are to be added to it. */
  response?: Response;
}
