/** The demo's `google` authorization provider: a consent page on the demo server stands in for Google. */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  ServerConfigError,
  type StartChallengeInput,
  type TokenOwner,
  type TokenStore,
  WireError,
} from "@otc/server";
import express, { type RequestHandler, type Response, type Router } from "express";

interface Challenge {
  owner: TokenOwner;
  /** {@link ownerKey} of `owner`, kept so dropping a challenge finds its owner's pending set at once. */
  ownerKey: string;
  scopes: readonly string[];
  status: ChallengeStatus;
  expiresAt: number;
  tokens: TokenStore;
  /** The anti-CSRF token the consent form carries. */
  csrf: string;
  /** SHA-256 of `csrf`: submitted tokens are compared by digest, so the comparison is constant time whatever their length. */
  csrfDigest: Buffer;
}

/** Where the demo serves consent pages, below the server's base URL. */
export const CONSENT_PATH = "/demo/authorize";

/** Options of {@link DemoGoogleProvider}. */
export interface DemoGoogleProviderOptions {
  /** How long a challenge lives, pending or decided, in milliseconds. Default 10 minutes. */
  ttlMs?: number;
  /** The most pending challenges one owner (principal and user) has; starting one more drops that owner's oldest. Default 5. */
  maxPendingPerUser?: number;
  /** The most challenges held in total, decided ones included; beyond it `startChallenge` answers 503. Default 10,000. */
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

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

const ownerKey = (owner: TokenOwner) => JSON.stringify([owner.principal, owner.userId]);

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
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
  private readonly ttlMs: number;
  private readonly maxPendingPerUser: number;
  private readonly maxChallenges: number;
  private readonly now: () => number;
  /**
   * Insertion order is expiry order (one TTL for all), so expired challenges are always at the head
   * and pruning never scans the live ones.
   */
  private readonly challenges = new Map<string, Challenge>();
  /** Pending challenge ids by owner, oldest first. */
  private readonly pendingByOwner = new Map<string, Set<string>>();

  constructor(options: DemoGoogleProviderOptions = {}) {
    this.ttlMs = positiveInteger("ttlMs", options.ttlMs ?? 10 * 60 * 1000);
    this.maxPendingPerUser = positiveInteger("maxPendingPerUser", options.maxPendingPerUser ?? 5);
    this.maxChallenges = positiveInteger("maxChallenges", options.maxChallenges ?? 10_000);
    this.now = options.now ?? Date.now;
  }

  /** How many challenges are held (pending or decided, not expired). */
  get size(): number {
    this.prune();
    return this.challenges.size;
  }

  async startChallenge(input: StartChallengeInput): Promise<{ url: string }> {
    const now = this.now();
    this.prune(now);
    const key = ownerKey(input.owner);
    const mine = this.pendingByOwner.get(key);
    // The owner's oldest ones make room before the total is checked: they go anyway, so a full server still takes the new one.
    const dropped = mine ? Math.max(0, mine.size - this.maxPendingPerUser + 1) : 0;
    if (this.challenges.size - dropped >= this.maxChallenges) {
      const oldest = this.challenges.values().next().value;
      const retryAfter = Math.max(1, Math.ceil(((oldest?.expiresAt ?? now) - now) / 1000));
      throw new WireError("unavailable", "Too many authorization requests are pending", {
        developerMessage: `The demo google provider holds its maximum of ${this.maxChallenges} authorization challenges; retry once older ones expire.`,
        headers: { "Retry-After": String(retryAfter) },
      });
    }
    if (mine) {
      for (const id of [...mine].slice(0, dropped)) this.drop(id);
    }
    // A reused id would keep its old place in the Map and break the expiry order.
    this.drop(input.challengeId);
    const csrf = randomBytes(32).toString("base64url");
    this.challenges.set(input.challengeId, {
      owner: input.owner,
      ownerKey: key,
      scopes: input.scopes,
      status: "pending",
      expiresAt: now + this.ttlMs,
      tokens: input.tokens,
      csrf,
      csrfDigest: sha256(csrf),
    });
    const pending = this.pendingByOwner.get(key) ?? new Set<string>();
    pending.add(input.challengeId);
    this.pendingByOwner.set(key, pending);
    return { url: `${input.baseUrl}${CONSENT_PATH}/${encodeURIComponent(input.challengeId)}` };
  }

  async checkChallenge(challengeId: string): Promise<ChallengeStatus | undefined> {
    return this.live(challengeId)?.status;
  }

  /**
   * Completes or fails a pending challenge as the user decided. The programmatic decision: the
   * consent form checks its anti-CSRF token before calling this.
   */
  async decide(challengeId: string, approve: boolean): Promise<ChallengeStatus | undefined> {
    const challenge = this.live(challengeId);
    if (!challenge) return undefined;
    if (challenge.status !== "pending") return challenge.status;
    if (approve) {
      // The token is stored before the status changes, so a failing store leaves the challenge pending, not completed without a token.
      await challenge.tokens.set(challenge.owner, this.id, {
        token: `demo-google-${randomBytes(12).toString("hex")}`,
        scopes: challenge.scopes,
        expiresAt: this.now() + 60 * 60 * 1000,
      });
      // Another decision may have landed while the store was busy; the first one stands.
      if (challenge.status !== "pending" || this.challenges.get(challengeId) !== challenge) {
        return this.live(challengeId)?.status;
      }
    }
    challenge.status = approve ? "completed" : "failed";
    this.unpend(challengeId, challenge);
    return challenge.status;
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

    router.get(`${CONSENT_PATH}/:id`, (req, res) => {
      const challenge = this.live(req.params.id);
      if (!challenge) {
        notFound(res);
        return;
      }
      const scopes = challenge.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join("");
      const decided =
        challenge.status === "pending"
          ? `<form method="post"><input type="hidden" name="csrf" value="${escapeHtml(challenge.csrf)}">` +
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
        const challenge = this.live(req.params.id);
        if (!challenge) {
          notFound(res);
          return;
        }
        const form = (req.body ?? {}) as Record<string, unknown>;
        const csrf = typeof form.csrf === "string" ? form.csrf : "";
        // Refused before the action is read: a form posted from another site decides nothing.
        if (!timingSafeEqual(sha256(csrf), challenge.csrfDigest)) {
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
          // The server's error handler logs it and answers a JSON 500 without the exception's text.
          next(error);
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

  /** The challenge if it is held and not expired. */
  private live(challengeId: string): Challenge | undefined {
    const now = this.now();
    this.prune(now);
    const challenge = this.challenges.get(challengeId);
    return challenge && challenge.expiresAt > now ? challenge : undefined;
  }

  /** Drops expired challenges from the head: amortized O(1), since each challenge is dropped once. */
  private prune(now = this.now()): void {
    for (const [id, challenge] of this.challenges) {
      if (challenge.expiresAt > now) return;
      this.drop(id);
    }
  }

  private drop(challengeId: string): void {
    const challenge = this.challenges.get(challengeId);
    if (!challenge) return;
    this.challenges.delete(challengeId);
    this.unpend(challengeId, challenge);
  }

  private unpend(challengeId: string, challenge: Challenge): void {
    const pending = this.pendingByOwner.get(challenge.ownerKey);
    if (!pending) return;
    pending.delete(challengeId);
    if (pending.size === 0) this.pendingByOwner.delete(challenge.ownerKey);
  }
}
