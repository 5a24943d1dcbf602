/** The tasks extension's bench server: our native adapter with tools that wait, chatter and hold, and 101 API keys. */
import { createHandler, defineTool, listen } from "@otc/server";

/** The API keys of the principals the bench calls as: `bench-principal-000` ... `-100`. */
export const BENCH_KEYS = Array.from({ length: 101 }, (_, i) => `bench-principal-${String(i).padStart(3, "0")}`);

const none = { type: "object", properties: {}, additionalProperties: false };

export function tasksTools() {
  return [
    defineTool({
      toolkit: "Bench",
      name: "Wait",
      version: "1.0.0",
      description: "Answers after 20 ms.",
      inputSchema: none,
      outputSchema: { type: "integer" },
      run: () => new Promise((resolve) => setTimeout(() => resolve(5), 20)),
    }),
    defineTool({
      toolkit: "Bench",
      name: "Chatter",
      version: "1.0.0",
      description: "Reports `steps` progress updates, one a millisecond, then answers.",
      inputSchema: {
        type: "object",
        properties: { steps: { type: "integer", minimum: 1, maximum: 100000, description: "How many updates." } },
        required: ["steps"],
        additionalProperties: false,
      },
      outputSchema: { type: "integer" },
      run: async ({ steps }, context) => {
        for (let step = 1; step <= steps; step++) {
          context.progress({ progress: step, total: steps });
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        return steps;
      },
    }),
    defineTool({
      toolkit: "Bench",
      name: "Hold",
      version: "1.0.0",
      description: "Runs until cancelled.",
      inputSchema: none,
      outputSchema: null,
      run: (_input, { signal }) => new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true })),
    }),
  ];
}

export async function start() {
  const { url } = await listen(
    createHandler({
      tools: tasksTools(),
      auth: { apiKeys: BENCH_KEYS },
      // Every update kept, so that a stream carries all of them: the bench measures the cost per event.
      progressPerSecond: 1e9,
      fairness: false,
      eventStreams: { maxPerClient: 1_000 },
    }),
    { port: 0 },
  );
  return { url, note: "createHandler + listen, tasks tools" };
}
