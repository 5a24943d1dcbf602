/** The Sign in panel of a server with the oauth extension: the public client's id, the authorization server where the server names several, the redirect URI to register, and the signed-in state. */
import { useState } from "react";
import { DEFAULT_CLIENT_ID, INSPECTOR_SCOPES } from "./oauth.js";

/** Where the page's sign-in stands: kept in page memory only; the token itself never shows. */
export type SignInState =
  | { state: "idle" }
  | { state: "working"; step: string }
  | {
      state: "signed-in";
      issuer: string;
      scope?: string /** How often the access token was renewed. */;
      renewals?: number;
    }
  | { state: "error"; message: string };

/** The status line's note on renewals: none before the first. */
const renewedText = (renewals: number) =>
  renewals === 0 ? "" : ` (renewed with the refresh token ${renewals === 1 ? "once" : `${renewals} times`})`;

export function SignInView(props: {
  signIn: SignInState;
  /** The page's address without an authorization response: the redirect URI the page sends. */
  redirectUri: string;
  /** The authorization servers the server's resource metadata names, when it has been read. */
  authorizationServers?: string[];
  /** The one chosen among them (the first by default). */
  issuer?: string;
  /** Another one chosen. */
  onChoose?: (issuer: string) => void;
  /** Starts the flow with the client id typed. */
  onSignIn: (clientId: string) => void;
  onSignOut: () => void;
}) {
  const { signIn } = props;
  const [clientId, setClientId] = useState(DEFAULT_CLIENT_ID);
  return (
    <section className="sign-in" aria-label="Sign in">
      <label>
        Client id
        <input type="text" value={clientId} onChange={(event) => setClientId(event.target.value)} />
      </label>
      {props.authorizationServers && props.authorizationServers.length > 1 && (
        <label>
          Authorization server
          <select
            value={props.issuer ?? props.authorizationServers[0]}
            disabled={signIn.state === "working"}
            onChange={(event) => props.onChoose?.(event.target.value)}
          >
            {props.authorizationServers.map((issuer) => (
              <option key={issuer} value={issuer}>
                {issuer}
              </option>
            ))}
          </select>
        </label>
      )}
      <button
        type="button"
        disabled={signIn.state === "working" || !clientId.trim()}
        onClick={() => props.onSignIn(clientId.trim())}
      >
        Sign in
      </button>
      {signIn.state === "signed-in" && (
        <button type="button" onClick={props.onSignOut}>
          Sign out
        </button>
      )}
      <p role="status" aria-label="Sign-in status" className={`sign-in-status ${signIn.state}`}>
        {signIn.state === "idle" && "Not signed in"}
        {signIn.state === "working" && signIn.step}
        {signIn.state === "signed-in" &&
          `Signed in at ${signIn.issuer}${signIn.scope ? ` with ${signIn.scope}` : ""}: the access token is kept in this page's memory only${renewedText(signIn.renewals ?? 0)}`}
        {signIn.state === "error" && signIn.message}
      </p>
      <p className="hint">
        The server accepts OAuth access tokens. Sign in runs the authorization code flow with PKCE from this page, as a
        public client (no secret) asking for {INSPECTOR_SCOPES.join(" ")}: register a client with this id at the
        authorization server (default <code>{DEFAULT_CLIENT_ID}</code>), the redirect URI{" "}
        <code className="redirect-uri">{props.redirectUri}</code> and this page's origin allowed by CORS at its token
        endpoint. The page may call only the origins it was opened for, so it reloads once with <code>auth=</code>{" "}
        naming the authorization server's before it goes there, and once on return. It asks for{" "}
        <code>offline_access</code> too where the authorization server lists it, and renews the access token with the
        refresh token (kept in memory too) before it expires or when the server refuses it; a renewal that fails signs
        you out.
      </p>
    </section>
  );
}
