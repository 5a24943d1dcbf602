/** Test launcher: `otc mcp <argv>` from the CLI's sources, run with `node --import tsx`, so the stdio tests need no build. */
import { mcpCommand } from "../../../packages/cli/src/mcp-command.js";

const code = await mcpCommand(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
// Keep-alive sockets to the OXP server would hold the process open after the MCP client hung up.
process.exit(code);
