// Test helper: the OXP server @otc/ai's tests call, on node:http at 127.0.0.1 port 0: a tool for each outcome an
// adapter tells the model (a value, a tool's error, a 422, an authorization, a secret, two versions, a long call).
import { setTimeout as sleep } from "node:timers/promises";
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  createHandler,
  defineTool,
  type HandlerOptions,
  listen,
  OxpToolError,
  type RunningServer,
  type StartChallengeInput,
} from "@otc/server/node";

/** Where the consent pages are, below the server's URL: a challenge's `url` is `<server>/consent/<challenge id>`. */
export const CONSENT_PATH = "/consent";

/** The running server, and the counter Counter.Increment adds to. */
export interface FixtureServer extends RunningServer {
  counter: { value: number };
}

/** What each toolkit is for, as `GET /toolkits` (the search extension) lists it. */
export const TOOLKITS = {
  Calculator: { description: "Arithmetic on numbers." },
  Counter: { description: "A counter kept on the server." },
  Gmail: { description: "The user's mailbox." },
} as const;

/**
 * Starts the server; `observer` is told of every call, as the server option says, and `extensions` (default: all the
 * server implements) says which extensions it offers.
 */
export async function startFixtureServer(
  options: Pick<HandlerOptions, "observer" | "extensions"> = {},
): Promise<FixtureServer> {
  const counter = { value: 0 };
  const consent = new ConsentProvider();
  const app = createHandler({
    ...options,
    tools: fixtureTools(counter),
    toolkits: TOOLKITS,
    authorizationProviders: [consent],
    pages: [(request) => consent.page(request)],
    logger: false,
  });
  return Object.assign(await listen(app, { port: 0 }), { counter });
}

/**
 * The `google` provider: each challenge's URL is a consent page on this server, whose form (the button `action`,
 * `approve` or `deny`, posted back) decides it; approving stores a token for the challenge's owner.
 */
class ConsentProvider implements AuthorizationProvider {
  readonly id = "google";
  private readonly challenges = new Map<string, { input: StartChallengeInput; status: ChallengeStatus }>();

  async startChallenge(input: StartChallengeInput): Promise<{ url: string }> {
    this.challenges.set(input.challengeId, { input, status: "pending" });
    return { url: `${input.baseUrl}${CONSENT_PATH}/${encodeURIComponent(input.challengeId)}` };
  }

  async checkChallenge(challengeId: string): Promise<ChallengeStatus | undefined> {
    return this.challenges.get(challengeId)?.status;
  }

  /** The consent page: GET shows the form, POST decides and answers a 303 back to the page; other paths pass. */
  async page(request: Request): Promise<Response | undefined> {
    const { pathname } = new URL(request.url);
    if (!pathname.startsWith(`${CONSENT_PATH}/`)) {
      return undefined;
    }
    const challenge = this.challenges.get(decodeURIComponent(pathname.slice(CONSENT_PATH.length + 1)));
    if (!challenge) {
      return new Response("No such authorization request", { status: 404 });
    }
    if (request.method !== "POST") {
      const buttons = ["approve", "deny"].map((action) => `<button name="action" value="${action}">${action}</button>`);
      return new Response(`<form method="post">${buttons.join("")}</form>`, {
        headers: { "content-type": "text/html" },
      });
    }
    if (challenge.status === "pending") {
      const { input } = challenge;
      const approved = (await request.formData()).get("action") === "approve";
      if (approved) {
        await input.tokens.set(input.owner, this.id, { token: `token-${input.challengeId}`, scopes: input.scopes });
      }
      challenge.status = approved ? "completed" : "failed";
    }
    return new Response(null, { status: 303, headers: { location: pathname } });
  }
}

const DOORBELLS = ["doorbell42", "doorbell84"];
const EMAILS = [
  { id: "email_2", subject: "Your Receipt", snippet: "Thank you for your purchase..." },
  { id: "email_3", subject: "Team offsite", snippet: "The agenda for Friday is attached." },
  { id: "email_4", subject: "Unread: invoice overdue", snippet: "Your invoice #1234 is 10 days overdue." },
];
const GREETINGS = { en: "Hello", fr: "Bonjour", es: "Hola" } as const;
/** Safe by the protocol's hints: no approval asked for it. */
const SAFE = { read_only: true } as const;
const NAME = {
  type: "object",
  properties: { name: { type: "string", description: "Who." } },
  required: ["name"],
} as const;

/** The tools; every one but SMS.Send is annotated safe, so that only it asks approval by default. */
function fixtureTools(counter: { value: number }) {
  return [
    defineTool({
      toolkit: "Calculator",
      name: "Add",
      version: "1.0.0",
      description: "Adds two numbers together.",
      inputSchema: {
        type: "object",
        properties: { a: { type: "number", description: "A number." }, b: { type: "number", description: "Another." } },
        required: ["a", "b"],
        additionalProperties: false,
      },
      outputSchema: { type: "number" },
      annotations: SAFE,
      run: ({ a, b }) => a + b,
    }),
    defineTool({
      toolkit: "Doorbell",
      name: "Ring",
      version: "0.1.0",
      description: "Rings a doorbell; an unknown one is the tool's error, with the known ids and retry advice.",
      inputSchema: {
        type: "object",
        properties: { doorbell_id: { type: "string", description: "Which doorbell." } },
        required: ["doorbell_id"],
      },
      outputSchema: null,
      annotations: { read_only: false, destructive: false },
      run: ({ doorbell_id }) => {
        if (!DOORBELLS.includes(doorbell_id)) {
          throw new OxpToolError("Doorbell ID not found", {
            canRetry: true,
            additionalPromptContent: `ids: ${DOORBELLS.join(",")}`,
            retryAfterMs: 500,
          });
        }
      },
    }),
    defineTool({
      toolkit: "System",
      name: "GetTimestamp",
      version: "1.0.0",
      description: "The server's time.",
      inputSchema: {},
      outputSchema: { type: "string" },
      annotations: SAFE,
      run: () => new Date().toISOString(),
    }),
    defineTool({
      toolkit: "System",
      name: "Sleep",
      version: "1.0.0",
      description: "Waits `ms` milliseconds; stops at once when the call is cancelled.",
      inputSchema: {
        type: "object",
        properties: { ms: { type: "integer", minimum: 0, description: "How long." } },
        required: ["ms"],
      },
      outputSchema: { type: "object", properties: { slept_ms: { type: "integer" } }, required: ["slept_ms"] },
      annotations: SAFE,
      run: async ({ ms }, { signal }) => {
        await sleep(ms, undefined, { signal });
        return { slept_ms: ms };
      },
    }),
    defineTool({
      toolkit: "Gmail",
      name: "GetEmails",
      version: "1.2.0",
      description: "The user's emails whose subject or snippet has every word of the query.",
      inputSchema: { type: "object", properties: { query: { type: "string", description: "Words to find." } } },
      outputSchema: {},
      requirements: { authorization: [{ id: "google", oauth2: { scopes: ["gmail.readonly"] } }], user_id: true },
      annotations: SAFE,
      run: ({ query = "" }) => {
        const words = query.toLowerCase().split(/\s+/).filter(Boolean);
        const text = (email: (typeof EMAILS)[number]) => `${email.subject} ${email.snippet}`.toLowerCase();
        return { emails: EMAILS.filter((email) => words.every((word) => text(email).includes(word))) };
      },
    }),
    defineTool({
      toolkit: "SMS",
      name: "Send",
      version: "0.1.2",
      description: "Sends an SMS (here: says it did), with the secret TWILIO_API_KEY.",
      inputSchema: {
        type: "object",
        properties: {
          to: { type: "string", description: "A number." },
          message: { type: "string", description: "The text." },
        },
        required: ["to", "message"],
      },
      outputSchema: {},
      requirements: { secrets: [{ id: "TWILIO_API_KEY" }] },
      annotations: { read_only: false, destructive: true },
      run: () => ({ status: "sent" }),
    }),
    defineTool({
      toolkit: "Greeting",
      name: "Hello",
      version: "1.0.0",
      description: "Greets someone by name, as a string.",
      inputSchema: NAME,
      outputSchema: { type: "string" },
      annotations: SAFE,
      deprecationMessage: "Use Greeting.Hello@2.0.0, which answers an object.",
      run: ({ name }) => `Hello, ${name}!`,
    }),
    defineTool({
      toolkit: "Greeting",
      name: "Hello",
      version: "2.0.0",
      description: "Greets someone by name in English, French or Spanish.",
      inputSchema: {
        ...NAME,
        properties: { ...NAME.properties, language: { enum: ["en", "fr", "es"], description: "Default en." } },
      },
      outputSchema: {},
      annotations: SAFE,
      run: ({ name, language = "en" }) => ({ message: `${GREETINGS[language]}, ${name}!`, language }),
    }),
    defineTool({
      toolkit: "Counter",
      name: "Increment",
      version: "1.0.0",
      description: "Adds `by` to the server's counter and answers its new value.",
      inputSchema: {
        type: "object",
        properties: { by: { type: "integer", minimum: 1, description: "How much." } },
        required: ["by"],
      },
      outputSchema: {},
      annotations: { read_only: false, destructive: false },
      run: ({ by }) => {
        counter.value += by;
        return { value: counter.value };
      },
    }),
  ];
}
