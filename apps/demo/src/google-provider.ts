/** The demo's `google` authorization provider: a consent page on the demo server stands in for Google. */
import { randomBytes } from "node:crypto";
import type { AuthorizationProvider, ChallengeStatus, StartChallengeInput, TokenStore } from "@otc/server";
import express, { type Router } from "express";

interface Challenge {
  userId: string;
  scopes: readonly string[];
  status: ChallengeStatus;
  expiresAt: number;
  tokens: TokenStore;
}

/** Where the demo serves consent pages, below the server's base URL. */
export const CONSENT_PATH = "/demo/authorize";

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/**
 * A provider whose challenge `url` is a page on the demo server showing what is asked (provider,
 * scopes, user) with Approve and Deny buttons. Approving stores a demo token for (user, google).
 */
export class DemoGoogleProvider implements AuthorizationProvider {
  readonly id = "google";
  private readonly challenges = new Map<string, Challenge>();

  constructor(private readonly ttlMs = 10 * 60 * 1000) {}

  async startChallenge(input: StartChallengeInput): Promise<{ url: string }> {
    this.prune();
    this.challenges.set(input.challengeId, {
      userId: input.userId,
      scopes: input.scopes,
      status: "pending",
      expiresAt: Date.now() + this.ttlMs,
      tokens: input.tokens,
    });
    return { url: `${input.baseUrl}${CONSENT_PATH}/${encodeURIComponent(input.challengeId)}` };
  }

  async checkChallenge(challengeId: string): Promise<ChallengeStatus | undefined> {
    const challenge = this.challenges.get(challengeId);
    return challenge && challenge.expiresAt > Date.now() ? challenge.status : undefined;
  }

  /** Completes or fails a pending challenge as the user decided. */
  async decide(challengeId: string, approve: boolean): Promise<ChallengeStatus | undefined> {
    const challenge = this.challenges.get(challengeId);
    if (!challenge || challenge.expiresAt <= Date.now()) return undefined;
    if (challenge.status !== "pending") return challenge.status;
    challenge.status = approve ? "completed" : "failed";
    if (approve) {
      await challenge.tokens.set(challenge.userId, this.id, {
        token: `demo-google-${randomBytes(12).toString("hex")}`,
        scopes: challenge.scopes,
        expiresAt: Date.now() + 60 * 60 * 1000,
      });
    }
    return challenge.status;
  }

  /** The consent pages: GET shows the request, POST `action=approve|deny` decides it. */
  router(): Router {
    const router = express.Router();
    const page = (title: string, body: string) =>
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>` +
      `<meta name="viewport" content="width=device-width"><style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}` +
      `button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}code{background:#eee;padding:0 .25rem}</style></head><body>${body}</body></html>`;
    const notFound = page(
      "Not found",
      "<h1>No such request</h1><p>This authorization request is unknown or has expired.</p>",
    );

    router.get(`${CONSENT_PATH}/:id`, (req, res) => {
      const challenge = this.challenges.get(req.params.id);
      res.setHeader("Cache-Control", "no-store");
      if (!challenge || challenge.expiresAt <= Date.now()) {
        res.status(404).type("html").send(notFound);
        return;
      }
      const scopes = challenge.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join("");
      const decided =
        challenge.status === "pending"
          ? `<form method="post"><button name="action" value="approve">Approve</button><button name="action" value="deny">Deny</button></form>`
          : `<p>This request was <strong>${challenge.status === "completed" ? "approved" : "denied"}</strong>. You can close this page.</p>`;
      res
        .type("html")
        .send(
          page(
            "Authorize access",
            `<h1>Authorize access to Google</h1><p>The demo Tool Server asks, on behalf of user <strong>${escapeHtml(challenge.userId)}</strong>, for:</p><ul>${scopes}</ul>${decided}`,
          ),
        );
    });

    router.post(
      `${CONSENT_PATH}/:id`,
      express.urlencoded({ extended: false, limit: "1kb" }),
      async (req, res, next) => {
        try {
          const action = (req.body as Record<string, unknown> | undefined)?.action;
          if (action !== "approve" && action !== "deny") {
            res.status(400).type("html").send(page("Bad request", "<h1>Choose Approve or Deny</h1>"));
            return;
          }
          const status = await this.decide(req.params.id, action === "approve");
          if (!status) {
            res.status(404).type("html").send(notFound);
            return;
          }
          res.redirect(303, `${req.baseUrl}${CONSENT_PATH}/${encodeURIComponent(req.params.id)}`);
        } catch (error) {
          next(error);
        }
      },
    );
    return router;
  }

  private prune(): void {
    const now = Date.now();
    for (const [id, challenge] of this.challenges) if (challenge.expiresAt <= now) this.challenges.delete(id);
  }
}
