/**
 * @otc/mcp: a bridge both ways between OXP and the Model Context Protocol, on the official MCP SDK.
 * Every export here is public API; nothing else in src is.
 */

export type { HttpOAuthOptions } from "./auth.js";
export {
  AUTHORIZATION_META_KEY,
  catalogToMcpTools,
  createMcpBridge,
  ERROR_META_KEY,
  errorToCallToolResult,
  type McpBridge,
  type McpBridgeOptions,
  type McpCaller,
  TOOL_ID_META_KEY,
  toCallToolResult,
} from "./bridge.js";
export {
  type McpHttpSource,
  type McpSource,
  type McpStdioSource,
  type McpTools,
  type McpToolsOptions,
  mcpTools,
  type SkippedTool,
  toOxpValue,
} from "./mcp-tools.js";
export { MCP_TOOL_NAME, mcpToolName, OXP_NAME, oxpToolName } from "./names.js";
export {
  type InlineOptions,
  inlineRefs,
  isObjectSchema,
  type JsonSchema,
  type McpOutput,
  SchemaConversionError,
  toMcpInputSchema,
  toMcpOutput,
  toOxpInputSchema,
  toOxpOutputSchema,
} from "./schemas.js";
export {
  type HttpBridge,
  type HttpBridgeOptions,
  isLoopbackHost,
  MIN_TOKEN_LENGTH,
  type StdioBridge,
  serveHttp,
  serveStdio,
} from "./transports.js";
