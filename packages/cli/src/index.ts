/**
 * @otc/cli as a library: the command (`run` with injected I/O) and the bindings generator, for tools
 * that build on them. Every export here is public API; nothing else in src is.
 */

export { type RunRuntime, run } from "./cli.js";
export { generateBindings, typeNameOf } from "./codegen.js";
export { type InspectOptions, inspectCommand } from "./inspect-command.js";
export { EXIT, type Io } from "./io.js";
export { LOGIN_HELP, type LoginRuntime, loginCommand, logoutCommand } from "./login.js";
export { MCP_HELP, type McpCommandRuntime, mcpCommand } from "./mcp-command.js";
