/** The demo's `google` authorization provider: a consent page on the demo server stands in for Google. */
import { randomBytes } from "node:crypto";
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  type ChallengeStore,
  ChallengeStoreFullError,
  MemoryChallengeStore,
  ServerConfigError,
  type StartChallengeInput,
  type StoredChallenge,
  type TokenStore,
  WireError,
} from "@otc/server/node";
import { constantTimeEqual } from "@otc/types";
import escapeHtml from "escape-html";
import express, { type RequestHandler, type Response, type Router } from "express";

/** Where the demo serves consent pages, below the server's base URL. */
export const CONSENT_PATH = "/demo/authorize";

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
 * Headers of every consent route's answer: the page must not be framed (clickjacking the Approve
 * button), cached, or leak its URL (it holds the challenge id) in a Referer.
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

/** The anti-CSRF token the consent form carries, kept with the challenge so any instance can check it. */
const csrfOf = (challenge: StoredChallenge) => challenge.data.csrf ?? "";

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
        data: { csrf: randomBytes(32).toString("base64url") },
      });
    } catch (error) {
      if (!(error instanceof ChallengeStoreFullError)) throw error;
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
    if (!challenge) return undefined;
    if (challenge.status !== "pending") return challenge.status;
    if (approve) {
      if (!this.tokens) throw new Error("DemoGoogleProvider has no token store: pass `tokenStore`");
      // The token is stored before the status changes, so a failing store leaves the challenge pending, not completed without a token.
      await this.tokens.set(challenge.owner, this.id, {
        token: `demo-google-${randomBytes(12).toString("hex")}`,
        scopes: challenge.scopes,
        expiresAt: this.now() + 60 * 60 * 1000,
      });
    }
    // Another decision may have landed meanwhile, here or on another instance; the store keeps the first.
    return this.store.decide(challengeId, approve ? "completed" : "failed");
  }

  /** The consent pages: GET shows the request, POST `action=approve|deny` with the form's `csrf` token decides it. */
  router(): Router {
    const router = express.Router({ caseSensitive: true });
    const page = (title: string, body: string) =>
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>` +
      `<meta name="viewport" content="width=device-width"><style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}` +
      `button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}code{background:#eee;padding:0 .25rem}</style></head><body>${body}</body></html>`;
    const answer = (res: Response, status: number, title: string, body: string) => {
      res.status(status).type("html").send(page(title, body));
    };
    const notFound = (res: Response) =>
      answer(
        res,
        404,
        "Not found",
        "<h1>No such request</h1><p>This authorization request is unknown or has expired.</p>",
      );

    // First, so that every answer below CONSENT_PATH carries them, errors from later layers included.
    const secure: RequestHandler = (_req, res, next) => {
      res.set(SECURITY_HEADERS);
      next();
    };
    router.use(CONSENT_PATH, secure);

    /** The challenge a consent page names; when there is none, the answer is given here (404, or 503 if the store fails). */
    const find = async (id: string, res: Response, next: (error: unknown) => void) => {
      try {
        const challenge = await this.store.get(id);
        if (!challenge) notFound(res);
        return challenge;
      } catch (error) {
        next(unavailable(error));
        return undefined;
      }
    };

    router.get(`${CONSENT_PATH}/:id`, async (req, res, next) => {
      const challenge = await find(req.params.id, res, next);
      if (!challenge) return;
      const scopes = challenge.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join("");
      const decided =
        challenge.status === "pending"
          ? `<form method="post"><input type="hidden" name="csrf" value="${escapeHtml(csrfOf(challenge))}">` +
            `<button name="action" value="approve">Approve</button><button name="action" value="deny">Deny</button></form>`
          : `<p>This request was <strong>${challenge.status === "completed" ? "approved" : "denied"}</strong>. You can close this page.</p>`;
      answer(
        res,
        200,
        "Authorize access",
        `<h1>Authorize access to Google</h1><p>The demo Tool Server asks, on behalf of user <strong>${escapeHtml(challenge.owner.userId)}</strong>, for:</p><ul>${scopes}</ul>${decided}`,
      );
    });

    router.post(
      `${CONSENT_PATH}/:id`,
      express.urlencoded({ extended: false, limit: "1kb" }),
      async (req, res, next) => {
        const challenge = await find(req.params.id, res, next);
        if (!challenge) return;
        const form = (req.body ?? {}) as Record<string, unknown>;
        const csrf = typeof form.csrf === "string" ? form.csrf : "";
        // Refused before the action is read: a form posted from another site decides nothing.
        const expected = csrfOf(challenge);
        if (expected === "" || !constantTimeEqual(csrf, expected)) {
          answer(
            res,
            403,
            "Forbidden",
            "<h1>This form cannot be accepted</h1><p>It was not sent from this authorization page. Open the page again and choose there.</p>",
          );
          return;
        }
        if (form.action !== "approve" && form.action !== "deny") {
          answer(res, 400, "Bad request", "<h1>Choose Approve or Deny</h1>");
          return;
        }
        let status: ChallengeStatus | undefined;
        try {
          status = await this.decide(req.params.id, form.action === "approve");
        } catch (error) {
          next(unavailable(error));
          return;
        }
        if (!status) {
          notFound(res);
          return;
        }
        res.redirect(303, `${req.baseUrl}${CONSENT_PATH}/${encodeURIComponent(req.params.id)}`);
      },
    );
    return router;
  }
}
