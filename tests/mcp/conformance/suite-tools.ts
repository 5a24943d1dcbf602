/**
 * The fixture OXP tools the official MCP conformance suite calls through the bridge: each carries the name a
 * scenario asks for (toolkit `test`, so `test.simple_text@1.0.0` is listed to MCP as `test_simple_text`).
 */
import { defineTool, OxpToolError, type Tool } from "@otc/server";

/** The toolkit of every fixture tool: the bridge lists `test.<name>` as `test_<name>`, the suite's names. */
export const SUITE_TOOLKIT = "test";

/** What `test_simple_text` returns (the text the suite's scenario description shows). */
const SIMPLE_TEXT = "This is a simple text response for testing.";

/** The message `test_error_handling` fails with. */
const ERROR_MESSAGE = "This tool intentionally returns an error for testing";

/** The progress `test_tool_with_progress` reports, in order: the scenario's 0, 50 and 100 of 100. */
export const PROGRESS_STEPS = [
  { progress: 0, total: 100, message: "Started" },
  { progress: 50, total: 100, message: "Halfway" },
  { progress: 100, total: 100, message: "Done" },
] as const;

/**
 * The fixture server's `progressPerSecond`. `test_tool_with_progress` reports a step only once the one before reached
 * the suite (see {@link SuiteToolsOptions.delivered}), and the server keeps a later one at the end of its interval:
 * none is dropped, whatever the rate; a higher one only sends each sooner.
 */
export const SUITE_PROGRESS_PER_SECOND = 20;

/** Options of {@link suiteTools}. */
export interface SuiteToolsOptions {
  /**
   * Resolves once the bridge has sent the suite the notification of `progress`: `test_tool_with_progress` reports
   * its next step only then. The suite wants all three, and the bridge keeps only the latest while a notification
   * is on its way, so two reports close together (a busy machine) would reach the suite as one. Without it, the
   * steps are reported at once.
   */
  delivered?: (progress: number) => Promise<void>;
}

/** A 1x1 red PNG, as the image scenarios suggest. */
const RED_PIXEL_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/** What every fixture tool shares: the toolkit, a version, no input. */
const suiteTool = (name: string, description: string) =>
  ({ toolkit: SUITE_TOOLKIT, name, version: "1.0.0", description, inputSchema: {} }) as const;

/**
 * The fixture catalog. Besides the tools the passing scenarios call, it serves the content-type and logging
 * tools in the closest form OXP has (a JSON value, the server's own log), so that those scenarios fail for what
 * the bridge can carry rather than for a missing tool. Sampling and elicitation have no form at all: no tool.
 */
export function suiteTools(options: SuiteToolsOptions = {}): Tool[] {
  return [
    defineTool({
      ...suiteTool("simple_text", "Returns a fixed text."),
      outputSchema: { type: "string" },
      run: () => SIMPLE_TEXT,
    }),
    defineTool({
      ...suiteTool("error_handling", "Always fails with a tool error."),
      outputSchema: { type: "string" },
      run: () => {
        throw new OxpToolError(ERROR_MESSAGE);
      },
    }),
    defineTool({
      ...suiteTool("tool_with_progress", "Reports progress 0, 50 and 100 of 100, then returns."),
      outputSchema: { type: "string" },
      run: async (_input, { progress }) => {
        for (const step of PROGRESS_STEPS) {
          progress({ ...step });
          await options.delivered?.(step.progress);
        }
        return "Progress test completed";
      },
    }),
    // OXP tools log to the server's logger: the protocol carries nothing of it to the caller.
    defineTool({
      ...suiteTool("tool_with_logging", "Logs three lines on the server while it runs."),
      outputSchema: { type: "string" },
      run: (_input, { logger }) => {
        for (const line of ["Tool execution started", "Tool processing data", "Tool execution completed"]) {
          logger.info({}, line);
        }
        return "Logging test completed";
      },
    }),
    // OXP values are JSON: content blocks returned as a value reach MCP as JSON text and structuredContent.
    defineTool({
      ...suiteTool("image_content", "Returns an image content block as its value."),
      outputSchema: { type: "object" },
      run: () => ({ type: "image", data: RED_PIXEL_PNG, mimeType: "image/png" }),
    }),
    defineTool({
      ...suiteTool("audio_content", "Returns an audio content block as its value."),
      outputSchema: { type: "object" },
      run: () => ({
        type: "audio",
        data: "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=",
        mimeType: "audio/wav",
      }),
    }),
    defineTool({
      ...suiteTool("embedded_resource", "Returns an embedded resource content block as its value."),
      outputSchema: { type: "object" },
      run: () => ({
        type: "resource",
        resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource." },
      }),
    }),
    defineTool({
      ...suiteTool("multiple_content_types", "Returns text, image and resource content blocks as its value."),
      outputSchema: { type: "array" },
      run: () => [
        { type: "text", text: "Multiple content types test:" },
        { type: "image", data: RED_PIXEL_PNG, mimeType: "image/png" },
        {
          type: "resource",
          resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: '{"test":"data"}' },
        },
      ],
    }),
  ];
}
