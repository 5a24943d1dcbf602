/** The Connections panel (docs/protocol.md 9.7): the user's accounts at the server's providers, connected in a new tab, its flow polled, and disconnected. */
import type { Connection, ConnectionFlow } from "@otc/types";
import { useCallback, useEffect, useState } from "react";
import { type Credentials, canOpen, canPoll, clientFor } from "./session.js";

/** A provider a user can connect, as the discovery document lists it. */
export interface Provider {
  id: string;
  name: string;
}

/** How often a flow's check_url is read while the user is at the provider, as the page polls a challenge's. */
const POLL_MS = 1000;

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A flow being followed: its provider, and the status its check_url last gave. */
interface Following {
  provider: string;
  flow: ConnectionFlow;
  status: string;
  error?: string;
}

/**
 * The user's connections and a Connect button per provider. With an access token (pasted, or the page's Sign in)
 * the user is the token's subject; with an API key or a JWT the server needs the user named, so the panel asks for a
 * user id.
 */
export function ConnectionsView(props: { credentials: Credentials; providers: readonly Provider[] }) {
  const { credentials, providers } = props;
  const byToken = Boolean(credentials.accessToken || credentials.signIn);
  const [userId, setUserId] = useState("");
  const [items, setItems] = useState<Connection[]>();
  const [error, setError] = useState<string>();
  const [following, setFollowing] = useState<Following>();
  const options = useCallback(() => (!byToken && userId ? { userId } : {}), [byToken, userId]);
  // The connections routes exist only for requests that ask for the extension: the client asks for it.
  const client = useCallback(() => clientFor(credentials, undefined, ["connections"]), [credentials]);

  const refresh = useCallback(async () => {
    try {
      setItems(await client().listConnections(options()));
      setError(undefined);
    } catch (failure) {
      setError(`Could not list the connections: ${messageOf(failure)}`);
    }
  }, [client, options]);

  useEffect(() => {
    if (byToken) {
      void refresh();
    }
  }, [byToken, refresh]);

  const connect = async (provider: Provider) => {
    // The tab opens on the click (a tab opened after a wait is a popup a browser blocks), then goes to the flow.
    const tab = window.open("about:blank", "_blank");
    try {
      const flow = await client().connect({ provider: provider.id, ...options() });
      if (!canOpen(flow.url)) {
        tab?.close();
        setError(`The flow's url is not an http(s) URL: not opened (${flow.url})`);
        return;
      }
      if (tab) {
        tab.opener = null;
        tab.location.href = flow.url;
      }
      setFollowing({ provider: provider.name, flow, status: "pending" });
      setError(undefined);
    } catch (failure) {
      tab?.close();
      setError(`Could not connect ${provider.name}: ${messageOf(failure)}`);
    }
  };

  useEffect(() => {
    if (following?.status !== "pending" || !canPoll(following.flow.check_url, credentials.serverUrl)) {
      return;
    }
    const { flow } = following;
    const stop = new AbortController();
    // The client's own polling of a check_url, as the page follows a challenge's; it stops when the panel leaves.
    client()
      .waitForConnection(flow, { pollIntervalMs: POLL_MS, signal: stop.signal })
      .then(
        (status) => {
          setFollowing((current) => (current?.flow === flow ? { ...current, status } : current));
          void refresh();
        },
        (failure: unknown) => {
          if (!stop.signal.aborted) {
            setFollowing((current) =>
              current?.flow === flow ? { ...current, status: "unknown", error: messageOf(failure) } : current,
            );
          }
        },
      );
    return () => stop.abort();
  }, [following, client, credentials.serverUrl, refresh]);

  const disconnect = async (connection: Connection) => {
    try {
      await client().disconnect(connection.id, options());
      await refresh();
    } catch (failure) {
      setError(`Could not disconnect ${connection.provider}: ${messageOf(failure)}`);
    }
  };

  const nameOf = (id: string) => providers.find((provider) => provider.id === id)?.name ?? id;
  return (
    <section className="connections" aria-label="Connections">
      <h2>Connections</h2>
      <p className="hint">
        Accounts the server holds tokens for, so that tools use them without the page (or an agent) ever seeing them.
      </p>
      {!byToken && (
        <label>
          User id (with an API key or JWT the server needs the user named; signed in, it is the token's subject)
          <input type="text" value={userId} onChange={(event) => setUserId(event.target.value)} />
        </label>
      )}
      <div className="connection-actions">
        <button type="button" onClick={() => void refresh()}>
          List connections
        </button>
        {providers.map((provider) => (
          <button key={provider.id} type="button" onClick={() => void connect(provider)}>
            Connect {provider.name}
          </button>
        ))}
      </div>
      {following && (
        <p role="status" aria-label="Connection flow status" className={`status ${following.status}`}>
          {canPoll(following.flow.check_url, credentials.serverUrl)
            ? `Connecting ${following.provider}: ${following.status}`
            : `Connecting ${following.provider}: its check_url is not on ${credentials.serverUrl}, so it is not polled; list the connections once done`}
          {following.error ? ` (checking failed: ${following.error})` : ""}
        </p>
      )}
      {error && (
        <p role="alert" className="bad">
          {error}
        </p>
      )}
      {items && items.length === 0 && <p className="empty">No connections yet.</p>}
      {items && items.length > 0 && (
        <table aria-label="Connection list">
          <thead>
            <tr>
              <th>Provider</th>
              <th>Status</th>
              <th>Account</th>
              <th>Updated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {items.map((connection) => (
              <tr key={connection.id}>
                <td>{nameOf(connection.provider)}</td>
                <td>{connection.status}</td>
                <td>{connection.account ?? ""}</td>
                <td>{new Date(connection.updated_at).toLocaleString()}</td>
                <td>
                  <button type="button" onClick={() => void disconnect(connection)}>
                    Disconnect
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
