// The demo's consent page as its user works it: the form read for its anti-CSRF token, then submitted.

/**
 * Submits a consent page's form with `action` (`approve` or `deny`), its anti-CSRF token taken from the page as a
 * browser would send it back, and answers the submission's response (a 303 to the done page when it is taken).
 */
export async function submitConsent(url: string, action: "approve" | "deny" | (string & {})): Promise<Response> {
  const page = await (await fetch(url)).text();
  const csrf = /name="csrf" value="([^"]*)"/.exec(page)?.[1] ?? "";
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `action=${encodeURIComponent(action)}&csrf=${encodeURIComponent(csrf)}`,
    redirect: "manual",
  });
}
