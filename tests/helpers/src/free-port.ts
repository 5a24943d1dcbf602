// A loopback port free right now, for a peer (redis-server, a server whose origin must be known first) that cannot listen on port 0.
import { type AddressInfo, createServer } from "node:net";

/** A port nothing listens on now on 127.0.0.1 (the OS's choice for port 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
