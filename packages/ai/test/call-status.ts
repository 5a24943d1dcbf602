// Test helper: how a call ended on the server, read through the client (the tasks extension's call status).
import type { OxpClient } from "@otc/client";
import type { CallStatus } from "@otc/types";

/**
 * The call's status once it no longer runs, read by long polls for at most `withinMs`; `running` if it still runs
 * then. A cancel sent on an abort is on its way when the abort rejects, so it is waited for rather than read at once.
 */
export async function settledStatus(
  client: OxpClient,
  callId: string,
  withinMs = 3_000,
): Promise<CallStatus["status"]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const { status } = await client.callStatus(callId, { waitSeconds: 1 });
    if (status !== "running" || Date.now() >= deadline) {
      return status;
    }
  }
}
