/** The Sign in panel of a server with the oauth extension: the public client's id, the redirect URI to register, and the signed-in state. */
import { useState } from "react";
import { DEFAULT_CLIENT_ID, INSPECTOR_SCOPES } from "./oauth.js";

/** Where the page's sign-in stands: kept in page memory only; the token itself never shows. */
export type SignInState =
  | { state: "idle" }
  | { state: "working"; step: string }
  | { state: "signed-in"; issuer: string; scope?: string }
  | { state: "error"; message: string };

export function SignInView(props: {
  signIn: SignInState;
  /** The page's address without an authorization response: the redirect URI the page sends. */
  redirectUri: string;
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
          `Signed in at ${signIn.issuer}${signIn.scope ? ` with ${signIn.scope}` : ""}: the access token is kept in this page's memory only`}
        {signIn.state === "error" && signIn.message}
      </p>
      <p className="hint">
        The server accepts OAuth access tokens. Sign in runs the authorization code flow with PKCE from this page, as a
        public client (no secret) asking for {INSPECTOR_SCOPES.join(" ")}: register a client with this id at the
        authorization server (default <code>{DEFAULT_CLIENT_ID}</code>), the redirect URI{" "}
        <code className="redirect-uri">{props.redirectUri}</code> and this page's origin allowed by CORS at its token
        endpoint. The page may call only the origins it was opened for, so it reloads once with <code>auth=</code>{" "}
        naming the authorization server's before it goes there, and once on return.
      </p>
    </section>
  );
}
