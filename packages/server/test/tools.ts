// The server tests' own tool catalog, named after the protocol's examples (spec/examples), and a test authorization provider.
import { randomBytes } from "node:crypto";
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  defineTool,
  OxpToolError,
  type StartChallengeInput,
  type Tool,
} from "../src/index.js";

/** The scope Gmail.GetEmails asks the `google` provider for. */
export const GMAIL_READONLY_SCOPE = "https://www.googleapis.com/auth/gmail.readonly";

/** Where the test provider's challenge links point, below the server's base URL (nothing is served there). */
export const TEST_CONSENT_PATH = "/test/consent";

const KNOWN_DOORBELLS = ["doorbell42", "doorbell84"];
const GREETINGS = { en: "Hello", fr: "Bonjour", es: "Hola" } as const;

/**
 * The catalog: Calculator.Add (adds), Doorbell.Ring (no output, fails with every error field), Gmail.GetEmails
 * (user_id and `google` authorization), SMS.Send (a secret), Greeting.Hello 1.0.0 and 2.0.0, Counter.Increment
 * (adds to `counter`) and System.Sleep (waits, stops when aborted).
 */
export function testTools(counter = { value: 0 }): Tool[] {
  return [
    defineTool({
      toolkit: "Calculator",
      name: "Add",
      version: "1.0.0",
      annotations: { title: "Add two numbers", read_only: true, idempotent: true, open_world: false },
      description: "Adds two numbers together.",
      inputSchema: {
        type: "object",
        properties: {
          a: { type: "number", description: "The first number to add." },
          b: { type: "number", description: "The second number to add." },
        },
        required: ["a", "b"],
        additionalProperties: false,
      },
      outputSchema: { type: "number", description: "The sum of the two numbers." },
      run: ({ a, b }) => a + b,
    }),

    defineTool({
      toolkit: "Doorbell",
      name: "Ring",
      version: "0.1.0",
      description: "Rings a doorbell given a doorbell ID.",
      inputSchema: {
        type: "object",
        properties: { doorbell_id: { type: "string", description: "The ID of the doorbell to ring." } },
        required: ["doorbell_id"],
        additionalProperties: false,
      },
      outputSchema: null,
      run: ({ doorbell_id }) => {
        if (!KNOWN_DOORBELLS.includes(doorbell_id)) {
          throw new OxpToolError("Doorbell ID not found", {
            developerMessage: `The doorbell with ID '${doorbell_id}' does not exist.`,
            canRetry: true,
            additionalPromptContent: `ids: ${KNOWN_DOORBELLS.join(",")}`,
            retryAfterMs: 500,
          });
        }
      },
    }),

    defineTool({
      toolkit: "Gmail",
      name: "GetEmails",
      version: "1.2.0",
      description: "Lists a user's emails (none, in the tests): needs a user_id and the user's google token.",
      inputSchema: {
        type: "object",
        properties: { query: { type: "string", description: "Search query for filtering emails." } },
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { emails: { type: "array", items: { type: "string" } } },
        required: ["emails"],
        additionalProperties: false,
      },
      requirements: {
        authorization: [{ id: "google", oauth2: { scopes: [GMAIL_READONLY_SCOPE] } }],
        user_id: true,
      },
      run: () => ({ emails: [] }),
    }),

    defineTool({
      toolkit: "SMS",
      name: "Send",
      version: "0.1.2",
      annotations: { destructive: true, open_world: true },
      description: "Pretends to send an SMS: needs the TWILIO_API_KEY secret.",
      inputSchema: {
        type: "object",
        properties: {
          to: { type: "string", description: "Recipient phone number." },
          message: { type: "string", description: "Message content to send." },
        },
        required: ["to", "message"],
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { status: { type: "string" } },
        required: ["status"],
        additionalProperties: false,
      },
      requirements: { secrets: [{ id: "TWILIO_API_KEY" }] },
      run: () => ({ status: "sent" }),
    }),

    defineTool({
      toolkit: "Greeting",
      name: "Hello",
      version: "1.0.0",
      deprecationMessage: "Use Greeting.Hello@2.0.0, which speaks Spanish too.",
      description: "Greets someone by name (version 1: returns a plain string).",
      inputSchema: {
        type: "object",
        properties: { name: { type: "string", description: "Who to greet." } },
        required: ["name"],
        additionalProperties: false,
      },
      outputSchema: { type: "string" },
      run: ({ name }) => `Hello, ${name}!`,
    }),

    defineTool({
      toolkit: "Greeting",
      name: "Hello",
      version: "2.0.0",
      description: "Greets someone by name in English, French or Spanish (version 2: returns an object).",
      inputSchema: {
        type: "object",
        properties: {
          name: { type: "string", description: "Who to greet." },
          language: { type: "string", enum: ["en", "fr", "es"], description: "The greeting's language; default en." },
        },
        required: ["name"],
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { message: { type: "string" }, language: { type: "string", enum: ["en", "fr", "es"] } },
        required: ["message", "language"],
        additionalProperties: false,
      },
      run: ({ name, language = "en" }) => ({ message: `${GREETINGS[language]}, ${name}!`, language }),
    }),

    defineTool({
      toolkit: "Counter",
      name: "Increment",
      version: "1.0.0",
      description: "Adds to the server-wide counter and returns its new value.",
      inputSchema: {
        type: "object",
        properties: {
          by: { type: "integer", minimum: 1, maximum: 1_000_000, description: "How much to add (1 to 1,000,000)." },
        },
        required: ["by"],
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { value: { type: "integer" } },
        required: ["value"],
        additionalProperties: false,
      },
      run: ({ by }) => {
        counter.value += by;
        return { value: counter.value };
      },
    }),

    defineTool({
      toolkit: "System",
      name: "Sleep",
      version: "1.0.0",
      description: "Waits the given number of milliseconds, then reports it; reports progress, stops when aborted.",
      inputSchema: {
        type: "object",
        properties: {
          ms: { type: "integer", minimum: 0, maximum: 60000, description: "How long to wait, in milliseconds." },
        },
        required: ["ms"],
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { slept_ms: { type: "integer" } },
        required: ["slept_ms"],
        additionalProperties: false,
      },
      // Progress every 50 ms (elapsed of `ms`); an abort is logged, so tests can see the signal fired.
      run: ({ ms }, context) =>
        new Promise<{ slept_ms: number }>((resolve, reject) => {
          // Taken out of the context, as tools do.
          const { signal, progress } = context;
          const started = Date.now();
          const ticker = setInterval(() => {
            progress({ progress: Date.now() - started, total: ms, message: "Sleeping" });
          }, 50);
          const timer = setTimeout(() => {
            clearInterval(ticker);
            resolve({ slept_ms: ms });
          }, ms);
          signal.addEventListener(
            "abort",
            () => {
              clearTimeout(timer);
              clearInterval(ticker);
              context.logger.info({ reason: String(signal.reason?.name) }, "sleep aborted");
              reject(signal.reason);
            },
            { once: true },
          );
        }),
    }),
  ];
}

interface Challenge extends Pick<StartChallengeInput, "owner" | "scopes" | "tokens"> {
  status: ChallengeStatus;
}

/**
 * The `google` provider of the tests: a challenge stays pending until the test decides it with
 * {@link TestAuthorizationProvider.decide}, as a user would on a consent page.
 */
export class TestAuthorizationProvider implements AuthorizationProvider {
  readonly id = "google";
  private readonly challenges = new Map<string, Challenge>();

  /** How many challenges were started. */
  get size(): number {
    return this.challenges.size;
  }

  async startChallenge({ challengeId, owner, scopes, tokens, baseUrl }: StartChallengeInput): Promise<{ url: string }> {
    this.challenges.set(challengeId, { owner, scopes, tokens, status: "pending" });
    return { url: `${baseUrl}${TEST_CONSENT_PATH}/${encodeURIComponent(challengeId)}` };
  }

  async checkChallenge(challengeId: string): Promise<ChallengeStatus | undefined> {
    return this.challenges.get(challengeId)?.status;
  }

  /** Completes (storing a token for the challenge's owner) or fails a pending challenge. */
  async decide(challengeId: string, approve: boolean): Promise<ChallengeStatus | undefined> {
    const challenge = this.challenges.get(challengeId);
    if (challenge?.status !== "pending") {
      return challenge?.status;
    }
    if (approve) {
      await challenge.tokens.set(challenge.owner, this.id, {
        token: `test-google-${randomBytes(12).toString("hex")}`,
        scopes: challenge.scopes,
      });
    }
    challenge.status = approve ? "completed" : "failed";
    return challenge.status;
  }
}
