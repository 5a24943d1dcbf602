/** Opens a URL in the user's browser with the platform's opener (`otc inspect`, `otc login`). */
import { spawn } from "node:child_process";

/** Opens `url` with the platform's opener, without a shell: the URL is one argument, never parsed as a command. */
export function openInBrowser(url: string): Promise<void> {
  const [command, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["rundll32", ["url.dll,FileProtocolHandler", url]]
        : ["xdg-open", [url]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: "ignore", detached: true });
    child.once("error", reject);
    child.once("spawn", () => {
      child.unref();
      resolve();
    });
  });
}
