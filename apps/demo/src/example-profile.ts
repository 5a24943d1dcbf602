/** Example.Profile: a tool that reads the user's connected Example Accounts account with the token the connections vault puts into the call. */
import { defineTool, OxpToolError, type Tool } from "@otc/server/fetch";

/** The connection provider's id, as tools name it in `requirements.authorization`. */
export const EXAMPLE_PROVIDER_ID = "example";

/** The tool, reading the profile at Example Accounts' userinfo endpoint (OpenID Connect Core 5.3). */
export function exampleProfileTool(userinfoUrl: string): Tool {
  return defineTool({
    toolkit: "Example",
    name: "Profile",
    version: "1.0.0",
    description:
      "Reads the profile (subject, name, email) of the user's connected Example Accounts account. The server holds the account's token (the connections extension): connect it once in a browser.",
    inputSchema: {},
    outputSchema: {
      type: "object",
      properties: {
        sub: { type: "string", description: "The account's id at Example Accounts." },
        name: { type: "string" },
        preferred_username: { type: "string" },
        email: { type: "string" },
      },
      required: ["sub"],
      additionalProperties: false,
    },
    requirements: {
      authorization: [{ id: EXAMPLE_PROVIDER_ID, oauth2: { scopes: ["openid"] } }],
      user_id: true,
    },
    // Reads an account kept elsewhere and changes nothing there.
    annotations: { title: "Read the Example Accounts profile", read_only: true, idempotent: true, open_world: true },
    run: async (_input, context) => {
      const token = context.tokens[EXAMPLE_PROVIDER_ID];
      const response = await fetch(userinfoUrl, {
        headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
        signal: context.signal,
      });
      if (!response.ok) {
        await response.body?.cancel();
        throw new OxpToolError("Example Accounts did not answer with the profile", {
          developerMessage: `Its userinfo endpoint answered ${response.status}.`,
          canRetry: response.status >= 500,
        });
      }
      const info = (await response.json()) as Record<string, unknown>;
      const text = (name: string) =>
        typeof info[name] === "string" ? { [name]: (info[name] as string).slice(0, 256) } : {};
      if (typeof info.sub !== "string") {
        throw new OxpToolError("Example Accounts answered a profile without a subject", { canRetry: false });
      }
      return { sub: info.sub.slice(0, 256), ...text("name"), ...text("preferred_username"), ...text("email") };
    },
  });
}
