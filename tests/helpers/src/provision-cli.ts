// `npm run test:peers`, npm test's first step: provisions every peer the suites start before turbo runs any of them; exits 1, naming the command to run, where it cannot.
import { provisionPeers } from "./peers.js";

try {
  await provisionPeers();
} catch (error) {
  // biome-ignore lint/suspicious/noConsole: the reason the tests cannot start, for the person who ran them
  console.error(`test peers: ${(error as Error).message}`);
  process.exit(1);
}
