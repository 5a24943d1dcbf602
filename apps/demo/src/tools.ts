/** The demo's tool catalog: one tool per protocol feature a newcomer should see working. */
import { defineTool, OxpToolError, type Tool, type ToolContext } from "@otc/server/fetch";

const KNOWN_DOORBELLS = ["doorbell42", "doorbell84"];

/** The Gmail scope the demo's Gmail tool asks for. */
export const GMAIL_READONLY_SCOPE = "https://www.googleapis.com/auth/gmail.readonly";

const SAMPLE_EMAILS = [
  { id: "email_1", subject: "Welcome to Gmail", snippet: "Hello, welcome to your inbox!" },
  { id: "email_2", subject: "Your Receipt", snippet: "Thank you for your purchase..." },
  { id: "email_3", subject: "Team offsite", snippet: "The agenda for Friday is attached." },
  { id: "email_4", subject: "Unread: invoice overdue", snippet: "Your invoice #1234 is 10 days overdue." },
];

const GREETINGS = { en: "Hello", fr: "Bonjour", es: "Hola" } as const;

/** Builds the catalog. `counter` is the server-wide state of Counter.Increment. */
export function demoTools(counter = { value: 0 }): Tool[] {
  return [
    defineTool({
      toolkit: "Calculator",
      name: "Add",
      version: "1.0.0",
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
      // Arithmetic: it touches nothing, and the same input always gives the same sum.
      annotations: { title: "Add two numbers", read_only: true, idempotent: true, open_world: false },
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
      // A real doorbell would ring in the physical world, again on every call; it adds a sound, erases nothing.
      annotations: {
        title: "Ring a doorbell",
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: true,
      },
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
      toolkit: "System",
      name: "GetTimestamp",
      version: "1.0.0",
      description: "Retrieves the current system timestamp.",
      inputSchema: {},
      outputSchema: {
        type: "object",
        properties: {
          timestamp: { type: "string", format: "date-time", description: "The current system timestamp." },
        },
        required: ["timestamp"],
        additionalProperties: false,
      },
      // Reads the server's clock and changes nothing (the value differs each time, the world does not).
      annotations: { title: "Get the current time", read_only: true, idempotent: true, open_world: false },
      run: () => ({ timestamp: new Date().toISOString() }),
    }),

    defineTool({
      toolkit: "Gmail",
      name: "GetEmails",
      version: "1.2.0",
      description:
        "Retrieves emails from Gmail using OAuth 2.0 authorization. The demo serves built-in sample emails; the query filters them by subject and snippet.",
      inputSchema: {
        type: "object",
        properties: { query: { type: "string", description: "Search query for filtering emails." } },
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: {
          emails: {
            type: "array",
            description: "List of retrieved emails.",
            items: {
              type: "object",
              properties: { id: { type: "string" }, subject: { type: "string" }, snippet: { type: "string" } },
              required: ["id", "subject", "snippet"],
              additionalProperties: false,
            },
          },
        },
        required: ["emails"],
        additionalProperties: false,
      },
      requirements: {
        authorization: [{ id: "google", oauth2: { scopes: [GMAIL_READONLY_SCOPE] } }],
        user_id: true,
      },
      // Hints for the tool it stands for (the demo reads sample mail): a read-only scope on a mailbox elsewhere.
      annotations: { title: "Search Gmail", read_only: true, idempotent: true, open_world: true },
      run: ({ query }) => {
        const words = (query ?? "")
          .toLowerCase()
          .split(/\s+/)
          .filter((word) => word !== "" && !word.includes(":"));
        const unread = /\bis:unread\b/i.test(query ?? "");
        const emails = SAMPLE_EMAILS.filter((email) => {
          const text = `${email.subject} ${email.snippet}`.toLowerCase();
          return words.every((word) => text.includes(word)) && (!unread || text.includes("unread"));
        });
        return { emails };
      },
    }),

    defineTool({
      toolkit: "SMS",
      name: "Send",
      version: "0.1.2",
      description:
        "Sends SMS messages using Twilio. Demo only: nothing is sent; it checks its input and reports 'sent'.",
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
        properties: { status: { type: "string", description: "Status of the SMS sending operation." } },
        required: ["status"],
        additionalProperties: false,
      },
      requirements: { secrets: [{ id: "TWILIO_API_KEY" }] },
      // Hints for the tool it stands for (the demo sends nothing): a message sent cannot be taken back, and every call
      // sends one more, to a phone outside the server.
      annotations: { title: "Send an SMS", read_only: false, destructive: true, idempotent: false, open_world: true },
      run: () => ({ status: "sent" }),
    }),

    defineTool({
      toolkit: "Greeting",
      name: "Hello",
      version: "1.0.0",
      description: "Greets someone by name (version 1: returns a plain string).",
      inputSchema: {
        type: "object",
        properties: { name: { type: "string", description: "Who to greet." } },
        required: ["name"],
        additionalProperties: false,
      },
      outputSchema: { type: "string" },
      annotations: { title: "Say hello", read_only: true, idempotent: true, open_world: false },
      deprecationMessage: "Use Greeting.Hello@2.0.0: it returns an object and speaks French and Spanish too.",
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
      annotations: {
        title: "Say hello in English, French or Spanish",
        read_only: true,
        idempotent: true,
        open_world: false,
      },
      run: ({ name, language = "en" }) => ({ message: `${GREETINGS[language]}, ${name}!`, language }),
    }),

    defineTool({
      toolkit: "Counter",
      name: "Increment",
      version: "1.0.0",
      description: "Adds to a server-wide counter and returns its new value. Repeating a call_id does not add again.",
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
      // Each call adds again (only a repeated call_id does not), and it adds to a count kept on this server alone.
      annotations: {
        title: "Increment the counter",
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
      },
      run: ({ by }) => {
        // One caller must not break the counter for everyone: it stays a safe integer.
        if (counter.value + by > Number.MAX_SAFE_INTEGER) {
          throw new OxpToolError("The counter is full", {
            developerMessage: `Adding ${by} would take it past ${Number.MAX_SAFE_INTEGER}.`,
            canRetry: false,
          });
        }
        counter.value += by;
        return { value: counter.value };
      },
    }),

    defineTool({
      toolkit: "System",
      name: "Sleep",
      version: "1.0.0",
      description:
        "Waits the given number of milliseconds, reporting its progress every 100 ms, then reports it. Shows time limits, progress and cancellation: it stops at once when aborted or cancelled.",
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
      // Waits and reports: nothing changes anywhere.
      annotations: { title: "Wait a while", read_only: true, idempotent: true, open_world: false },
      run: ({ ms }, context) => sleep(ms, context),
    }),
  ];
}

/** How often System.Sleep reports its progress, in milliseconds. */
export const SLEEP_PROGRESS_INTERVAL_MS = 100;

/** What each of the demo's toolkits is for, as `GET /toolkits` lists them (docs/protocol.md 9.5). */
export const DEMO_TOOLKITS = {
  Calculator: { description: "Arithmetic on two numbers." },
  Counter: { description: "A counter the server keeps, to show calls that change state and replay." },
  Doorbell: { description: "A pretend smart doorbell, to show a tool that fails." },
  Gmail: { description: "Reads the user's Gmail, to show OAuth 2.0 authorization with challenges." },
  Greeting: { description: "Says hello, in two versions of one tool." },
  SMS: { description: "Sends a text message with a secret the server holds." },
  System: { description: "The server's clock, and a slow tool that reports progress, to show tasks and cancellation." },
} as const;

/**
 * System.Sleep's run: waits `ms`, reporting the milliseconds slept every {@link SLEEP_PROGRESS_INTERVAL_MS}; once
 * its signal fires (a time limit, a cancel, shutdown) it clears its timers and rejects with the signal's reason.
 */
function sleep(ms: number, context: Pick<ToolContext, "signal" | "progress">): Promise<{ slept_ms: number }> {
  const { signal } = context;
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const started = Date.now();
    const ticker = setInterval(() => {
      const slept = Math.min(ms, Date.now() - started);
      context.progress({ progress: slept, total: ms, message: `Slept ${slept} of ${ms} ms` });
    }, SLEEP_PROGRESS_INTERVAL_MS);
    const stop = () => {
      clearTimeout(timer);
      clearInterval(ticker);
      signal.removeEventListener("abort", aborted);
    };
    const aborted = () => {
      stop();
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      stop();
      resolve({ slept_ms: ms });
    }, ms);
    signal.addEventListener("abort", aborted, { once: true });
  });
}
