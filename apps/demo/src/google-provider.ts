/** The demo's `google` authorization provider: a consent page on the demo server stands in for Google. */
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  type ChallengeStore,
  ChallengeStoreFullError,
  type FetchPage,
  MemoryChallengeStore,
  ServerConfigError,
  type StartChallengeInput,
  type StoredChallenge,
  type TokenStore,
  WireError,
} from "@otc/server/fetch";
import { constantTimeEqual } from "@otc/types";
import escapeHtml from "escape-html";

/** Where the demo serves consent pages, below the server's base URL. */
export const CONSENT_PATH = "/demo/authorize";

/** A consent page's path: the challenge id, then an optional trailing slash (as Express's `/demo/authorize/:id` matched). */
const CONSENT_ROUTE = new RegExp(`^${CONSENT_PATH}/([^/]+)(/?)$`);

/** The largest consent form body, in bytes (`express.urlencoded`'s "1kb"): the form sends two short fields. */
const FORM_LIMIT = 1024;

/** Options of {@link DemoGoogleProvider}. */
export interface DemoGoogleProviderOptions {
  /**
   * Where challenges live. Default: a {@link MemoryChallengeStore} with the bounds below. Several
   * instances sharing one store (e.g. `@otc/redis`) let a challenge started on one be completed on another.
   */
  challengeStore?: ChallengeStore;
  /**
   * Where an approved challenge's token goes: the server's token store. Default: the store the server
   * passes to `startChallenge`, which only this instance knows; instances sharing challenges must pass it.
   */
  tokenStore?: TokenStore;
  /** How long a challenge lives, pending or decided, in milliseconds. Default 10 minutes. Only for the default store. */
  ttlMs?: number;
  /** The most pending challenges one owner (principal and user) has; starting one more drops that owner's oldest. Default 5. Only for the default store. */
  maxPendingPerUser?: number;
  /**
   * The most challenges one principal holds, pending or decided, over all its user ids; starting one
   * more drops that principal's oldest, so one principal cannot fill the store. Default 1,000. Only for the default store.
   */
  maxChallengesPerPrincipal?: number;
  /** The most challenges held in total, decided ones included; beyond it `startChallenge` answers 503. Default 10,000. Only for the default store. */
  maxChallenges?: number;
  /** The clock, in epoch milliseconds; tests replace it. Default `Date.now`. */
  now?: () => number;
}

/**
 * Headers of every consent route's answer, its JSON errors included: the page must not be framed (clickjacking the
 * Approve button), cached, or leak its URL (it holds the challenge id) in a Referer.
 */
const SECURITY_HEADERS = {
  "X-Frame-Options": "DENY",
  "Content-Security-Policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "Cache-Control": "no-store",
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff",
} as const;

/**
 * A consent page's failure to reach the challenge or token store (Redis down, say) as a 503 JSON
 * answer with `Retry-After`, as the protocol routes answer it; the cause goes to the log only.
 */
const unavailable = (cause: unknown) =>
  cause instanceof WireError
    ? cause
    : new WireError("unavailable", "The server's shared state is unavailable", {
        developerMessage: "The authorization request could not be read or decided; retry shortly.",
        headers: { "Retry-After": "1" },
        cause,
      });

/** The methods a consent page answers; any other is a 405 naming them in `Allow`. */
const ALLOWED_METHODS = "GET, HEAD, POST";

/**
 * A consent route's error, answered by the server in JSON, with the headers of the route's other answers: a
 * {@link WireError} thrown on the way keeps its kind, message, headers (`Retry-After`) and cause; anything else is
 * thrown as it is, for the server to answer (and log) as its own.
 */
const withSecurityHeaders = (error: unknown) =>
  error instanceof WireError
    ? new WireError(error.kind, error.message, {
        ...error.details,
        headers: { ...SECURITY_HEADERS, ...error.details.headers },
      })
    : error;

/** A consent page's challenge id from its path segment: a segment that is not valid percent-encoding is a 400. */
function challengeIdOf(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch (error) {
    throw new WireError("bad_request", "This authorization request's address is malformed", {
      developerMessage: "The challenge id in the path is not valid percent-encoding.",
      cause: error,
    });
  }
}

/** The anti-CSRF token the consent form carries, kept with the challenge so any instance can check it. */
const csrfOf = (challenge: StoredChallenge) => challenge.data.csrf ?? "";

/** `length` random bytes from the Web Crypto API, which every runtime the demo runs on has (no `node:crypto`). */
const randomBytes = (length: number) => crypto.getRandomValues(new Uint8Array(length));

/** Bytes as unpadded base64url (RFC 4648 section 5), without `Buffer`. */
const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

/** Bytes as lower-case hexadecimal. */
const hex = (bytes: Uint8Array) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");

/** A whole consent page: the title, the body's HTML, the page's inline style (which the policy allows). */
const html = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>` +
  `<meta name="viewport" content="width=device-width"><style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}` +
  `button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}code{background:#eee;padding:0 .25rem}</style></head><body>${body}</body></html>`;

/** The consent routes' answers that are not the consent page itself: a status and the page's HTML. */
const PAGES = {
  notFound: [
    404,
    html("Not found", "<h1>No such request</h1><p>This authorization request is unknown or has expired.</p>"),
  ],
  forbidden: [
    403,
    html(
      "Forbidden",
      "<h1>This form cannot be accepted</h1><p>It was not sent from this authorization page. Open the page again and choose there.</p>",
    ),
  ],
  badAction: [400, html("Bad request", "<h1>Choose Approve or Deny</h1>")],
} as const;

/** The consent page of a challenge: what is asked, and the form while it is pending. */
function consentHtml(challenge: StoredChallenge): string {
  const scopes = challenge.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join("");
  const decided =
    challenge.status === "pending"
      ? `<form method="post"><input type="hidden" name="csrf" value="${escapeHtml(csrfOf(challenge))}">` +
        `<button name="action" value="approve">Approve</button><button name="action" value="deny">Deny</button></form>`
      : `<p>This request was <strong>${challenge.status === "completed" ? "approved" : "denied"}</strong>. You can close this page.</p>`;
  return html(
    "Authorize access",
    `<h1>Authorize access to Google</h1><p>The demo Tool Server asks, on behalf of user <strong>${escapeHtml(challenge.owner.userId)}</strong>, for:</p><ul>${scopes}</ul>${decided}`,
  );
}

/** An HTML answer of the consent routes, with their headers; a HEAD gets the headers of GET and no body. */
function htmlResponse([status, page]: readonly [number, string], head = false): Response {
  const body = new TextEncoder().encode(page);
  return new Response(head ? null : body, {
    status,
    headers: {
      ...SECURITY_HEADERS,
      "Content-Type": "text/html; charset=utf-8",
      "Content-Length": String(body.byteLength),
    },
  });
}

/** The one value of a form field sent exactly once; a field sent twice counts as not sent (as Express's parser made it an array). */
function fieldOf(form: URLSearchParams, name: string): string | undefined {
  const values = form.getAll(name);
  return values.length === 1 ? values[0] : undefined;
}

/**
 * The consent form's fields, as `express.urlencoded({ extended: false, limit: "1kb" })` read them: a body of another
 * type (or none) holds no fields; a charset other than UTF-8 or ISO-8859-1, or any Content-Encoding, is a 415 (no
 * browser compresses a form); more than {@link FORM_LIMIT} bytes is a 413, refused by its declared length before
 * anything is read, else as soon as the bytes read pass it.
 */
async function readForm(request: Request): Promise<URLSearchParams> {
  const type = request.headers.get("content-type")?.trim() ?? "";
  if (!request.body || !/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
    return new URLSearchParams();
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type)?.[1]?.toLowerCase() ?? "utf-8";
  const encoding = request.headers.get("content-encoding")?.trim().toLowerCase() || "identity";
  if ((charset !== "utf-8" && charset !== "iso-8859-1") || encoding !== "identity") {
    throw new WireError("unsupported_media_type", "The request body's encoding is not supported", {
      developerMessage: "Send the consent form as UTF-8, without Content-Encoding.",
    });
  }
  const tooLarge = () =>
    new WireError("payload_too_large", "The request body is too large", {
      developerMessage: `The consent form's limit is ${FORM_LIMIT} bytes.`,
    });
  if (Number(request.headers.get("content-length")) > FORM_LIMIT) {
    throw tooLarge();
  }
  // Every field compared is ASCII (a base64url token, approve or deny): any other byte fails the comparison whichever
  // charset decodes it, so UTF-8 decodes both.
  const decoder = new TextDecoder();
  const reader = request.body.getReader();
  let size = 0;
  let text = "";
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    size += chunk.value.byteLength;
    if (size > FORM_LIMIT) {
      reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    text += decoder.decode(chunk.value, { stream: true });
  }
  return new URLSearchParams(text + decoder.decode());
}

function positiveInteger(name: string, value: number | undefined): number | undefined {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
    throw new ServerConfigError(`DemoGoogleProvider: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

/**
 * A provider whose challenge `url` is a page on the demo server showing what is asked (provider,
 * scopes, user) with Approve and Deny buttons. Approving stores a demo token for (user, google).
 */
export class DemoGoogleProvider implements AuthorizationProvider {
  readonly id = "google";
  private readonly store: ChallengeStore;
  private tokens: TokenStore | undefined;
  private readonly now: () => number;

  constructor(options: DemoGoogleProviderOptions = {}) {
    const bounds = {
      ttlMs: positiveInteger("ttlMs", options.ttlMs),
      maxPendingPerOwner: positiveInteger("maxPendingPerUser", options.maxPendingPerUser),
      maxChallengesPerPrincipal: positiveInteger("maxChallengesPerPrincipal", options.maxChallengesPerPrincipal),
      maxChallenges: positiveInteger("maxChallenges", options.maxChallenges),
      now: options.now,
    };
    this.store = options.challengeStore ?? new MemoryChallengeStore(bounds);
    this.tokens = options.tokenStore;
    this.now = options.now ?? Date.now;
  }

  /** How many challenges are held (pending or decided, not expired), when the store can tell. */
  get size(): number | undefined {
    return this.store.size;
  }

  async startChallenge(input: StartChallengeInput): Promise<{ url: string }> {
    this.tokens ??= input.tokens;
    try {
      await this.store.add(input.challengeId, {
        owner: input.owner,
        scopes: input.scopes,
        data: { csrf: base64url(randomBytes(32)) },
      });
    } catch (error) {
      if (!(error instanceof ChallengeStoreFullError)) {
        throw error;
      }
      throw new WireError("unavailable", "Too many authorization requests are pending", {
        developerMessage: `The demo google provider holds its maximum of ${error.maxChallenges} authorization challenges; retry once older ones expire.`,
        headers: { "Retry-After": String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))) },
      });
    }
    return { url: `${input.baseUrl}${CONSENT_PATH}/${encodeURIComponent(input.challengeId)}` };
  }

  async checkChallenge(challengeId: string): Promise<ChallengeStatus | undefined> {
    return (await this.store.get(challengeId))?.status;
  }

  /**
   * Completes or fails a pending challenge as the user decided. The programmatic decision: the
   * consent form checks its anti-CSRF token before calling this.
   */
  async decide(challengeId: string, approve: boolean): Promise<ChallengeStatus | undefined> {
    const challenge = await this.store.get(challengeId);
    if (!challenge) {
      return undefined;
    }
    if (challenge.status !== "pending") {
      return challenge.status;
    }
    if (approve) {
      if (!this.tokens) {
        throw new Error("DemoGoogleProvider has no token store: pass `tokenStore`");
      }
      // The token is stored before the status changes, so a failing store leaves the challenge pending, not completed without a token.
      await this.tokens.set(challenge.owner, this.id, {
        token: `demo-google-${hex(randomBytes(12))}`,
        scopes: challenge.scopes,
        expiresAt: this.now() + 60 * 60 * 1000,
      });
    }
    // Another decision may have landed meanwhile, here or on another instance; the store keeps the first.
    return this.store.decide(challengeId, approve ? "completed" : "failed");
  }

  /** The challenge a consent page names, or undefined; a failing store is the 503 of {@link unavailable}. */
  private async challenge(id: string): Promise<StoredChallenge | undefined> {
    try {
      return await this.store.get(id);
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * Decides a challenge as its consent form asks, once the form's anti-CSRF token is checked: "decided", or the page
   * to answer with. A form field is its string value; anything else (absent, sent twice) counts as not sent.
   */
  private async decideByForm(
    id: string,
    challenge: StoredChallenge,
    form: { csrf?: unknown; action?: unknown },
  ): Promise<keyof typeof PAGES | "decided"> {
    const csrf = typeof form.csrf === "string" ? form.csrf : "";
    // Refused before the action is read: a form posted from another site decides nothing.
    const expected = csrfOf(challenge);
    if (expected === "" || !constantTimeEqual(csrf, expected)) {
      return "forbidden";
    }
    if (form.action !== "approve" && form.action !== "deny") {
      return "badAction";
    }
    let status: ChallengeStatus | undefined;
    try {
      status = await this.decide(id, form.action === "approve");
    } catch (error) {
      throw unavailable(error);
    }
    return status ? "decided" : "notFound";
  }

  /**
   * The consent pages as a fetch-style page, for every adapter and runtime: GET and HEAD show the request, POST
   * `action=approve|deny` with the form's `csrf` token decides it and answers a 303 back to the page. Other paths are
   * passed on (undefined). Another method (405, with `Allow`), a path segment that is not valid percent-encoding
   * (400), a body past 1 KiB (413) or in another encoding (415) and a failing store (503) are thrown as their
   * {@link WireError}, with the pages' security headers: the server answers them in JSON.
   *
   * @example
   * const google = new DemoGoogleProvider();
   * const answer = await google.page()(new Request("http://127.0.0.1:8080/demo/authorize/google.abc"));
   */
  page(): FetchPage {
    return async (request) => {
      const route = CONSENT_ROUTE.exec(new URL(request.url).pathname);
      if (!route) {
        return undefined;
      }
      try {
        return await this.answer(request, route);
      } catch (error) {
        throw withSecurityHeaders(error);
      }
    };
  }

  /** A consent route's answer to `request`; `route` is its path's match of {@link CONSENT_ROUTE}. */
  private async answer(request: Request, route: RegExpExecArray): Promise<Response> {
    const { method } = request;
    if (method !== "GET" && method !== "HEAD" && method !== "POST") {
      throw new WireError("method_not_allowed", "This method is not allowed here", {
        developerMessage: `A consent page answers ${ALLOWED_METHODS}.`,
        headers: { Allow: ALLOWED_METHODS },
      });
    }
    const [, segment = "", slash] = route;
    const id = challengeIdOf(segment);
    // Read before the store is asked, as Express's body parser ran before the route: a 413 needs no lookup.
    const form = method === "POST" ? await readForm(request) : undefined;
    const challenge = await this.challenge(id);
    if (!challenge) {
      return htmlResponse(PAGES.notFound, method === "HEAD");
    }
    if (!form) {
      return htmlResponse([200, consentHtml(challenge)], method === "HEAD");
    }
    const outcome = await this.decideByForm(id, challenge, {
      csrf: fieldOf(form, "csrf"),
      action: fieldOf(form, "action"),
    });
    if (outcome !== "decided") {
      return htmlResponse(PAGES[outcome]);
    }
    // Relative to the path asked for, so that it holds below whatever prefix the server is mounted under.
    const location = `${slash ? "../" : "./"}${encodeURIComponent(id)}`;
    return new Response(null, { status: 303, headers: { ...SECURITY_HEADERS, Location: location } });
  }
}
