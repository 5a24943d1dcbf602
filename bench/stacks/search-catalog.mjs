/**
 * The search rows' catalog: generated tools whose text is spread as a real catalog's is (a few hundred verbs, objects,
 * qualifiers and parameter names over ~60 toolkits of uneven size), from a seeded PRNG, so that every run indexes and
 * searches the same 10,000 tools and a query's terms hit some tools often and most tools never.
 */

/** mulberry32: small, fast and the same sequence on every runtime for a seed. */
function prng(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- vocabulary -------------------------------------------------------------------------------------------------------

/** Read verbs: listed with plural objects, annotated read-only. */
const LIST_VERBS = ["list", "search", "export", "count", "find"];
const READ_VERBS = new Set([
  "get",
  "list",
  "search",
  "export",
  "count",
  "find",
  "fetch",
  "preview",
  "download",
  "watch",
]);
/** Verbs every toolkit has, the common ones more often (repeated). */
const GENERIC_VERBS = [
  ..."get get get list list list create create create update update delete delete search search".split(" "),
  ..."archive export count fetch copy move restore tag find preview duplicate watch".split(" "),
];

/** What each kind of service works on: its objects, its own verbs, and the parameters its tools take. */
const DOMAINS = {
  mail: {
    objects: ["email", "draft", "thread", "label", "attachment", "mailbox", "signature", "filter", "contact", "folder"],
    verbs: ["send", "reply to", "forward", "star", "mark read", "snooze", "schedule"],
    fields: [
      ["subject", "string", "The subject line of the email."],
      ["body", "string", "The message body, as plain text or HTML."],
      ["recipient", "string", "The email address of the recipient."],
      ["cc", "array", "Addresses to copy on the message."],
      ["sender", "string", "Only messages from this address."],
      ["received_after", "date", "Only messages received after this date."],
      ["has_attachment", "boolean", "Only messages that carry an attachment."],
      ["importance", ["low", "normal", "high"], "How important the message is marked."],
    ],
  },
  chat: {
    objects: [
      "message",
      "channel",
      "thread",
      "reaction",
      "member",
      "workspace",
      "reminder",
      "emoji",
      "bookmark",
      "huddle",
    ],
    verbs: ["post", "send", "pin", "react to", "mention", "invite", "mute"],
    fields: [
      ["channel", "string", "The channel name or id, for example #general."],
      ["text", "string", "The text of the message; supports mrkdwn."],
      ["thread_ts", "string", "Timestamp of the parent message, to reply in its thread."],
      ["user", "string", "The member's id or handle."],
      ["unfurl_links", "boolean", "Whether links in the text get previews."],
      ["oldest", "date", "Only messages after this moment."],
      ["is_private", "boolean", "Whether the channel is private."],
    ],
  },
  crm: {
    objects: ["contact", "lead", "deal", "company", "opportunity", "pipeline", "note", "activity", "account", "quote"],
    verbs: ["assign", "qualify", "convert", "merge", "import", "log", "enrich"],
    fields: [
      ["email", "string", "The contact's email address."],
      ["first_name", "string", "The person's first name."],
      ["last_name", "string", "The person's last name."],
      ["company_name", "string", "The name of the company."],
      ["stage", ["prospect", "qualified", "proposal", "won", "lost"], "The deal's stage in the pipeline."],
      ["amount", "number", "The value of the deal, in the account's currency."],
      ["owner_email", "string", "Email address of the sales rep who owns the record."],
      ["phone", "string", "A phone number in E.164 format."],
    ],
  },
  projects: {
    objects: ["issue", "task", "project", "sprint", "comment", "label", "milestone", "board", "epic", "subtask"],
    verbs: ["assign", "close", "reopen", "transition", "estimate", "link", "prioritize"],
    fields: [
      ["title", "string", "A short summary of the work."],
      ["description", "string", "The details, in Markdown."],
      ["assignee", "string", "Who the work is assigned to, by username."],
      ["priority", ["lowest", "low", "medium", "high", "urgent"], "How urgent the work is."],
      ["due_date", "date", "When the work is due."],
      ["story_points", "integer", "The estimate, in story points."],
      ["state", ["todo", "in_progress", "in_review", "done"], "The workflow state."],
    ],
  },
  code: {
    objects: [
      "repository",
      "pull request",
      "commit",
      "branch",
      "release",
      "workflow run",
      "review comment",
      "tag",
      "deployment",
      "webhook",
    ],
    verbs: ["merge", "fork", "review", "approve", "trigger", "revert", "rerun"],
    fields: [
      ["owner", "string", "The account that owns the repository."],
      ["repo", "string", "The repository's name, without the owner."],
      ["base", "string", "The branch the changes are merged into."],
      ["head", "string", "The branch that holds the changes."],
      ["sha", "string", "The full commit SHA."],
      ["draft", "boolean", "Open it as a draft."],
      ["ref", "string", "A branch, tag or commit SHA."],
      ["path", "string", "A file path inside the repository."],
    ],
  },
  payments: {
    objects: [
      "invoice",
      "payment",
      "customer",
      "subscription",
      "refund",
      "charge",
      "payout",
      "coupon",
      "price",
      "dispute",
    ],
    verbs: ["charge", "refund", "capture", "void", "cancel", "send", "finalize"],
    fields: [
      ["amount", "integer", "The amount in the currency's smallest unit, for example cents."],
      ["currency", "string", "Three-letter ISO currency code, for example usd."],
      ["customer_id", "string", "The id of the customer to bill."],
      ["payment_method", "string", "The id of a card or bank account saved for the customer."],
      ["description", "string", "Text shown on the customer's statement and receipt."],
      ["days_until_due", "integer", "Days the customer has to pay the invoice."],
      ["collection", ["charge_automatically", "send_invoice"], "How the payment is collected."],
    ],
  },
  accounting: {
    objects: [
      "bill",
      "expense",
      "ledger entry",
      "vendor",
      "journal entry",
      "tax rate",
      "budget",
      "receipt",
      "chart of accounts",
      "balance sheet",
    ],
    verbs: ["reconcile", "approve", "categorize", "record", "submit", "void"],
    fields: [
      ["vendor_name", "string", "Who the bill is from."],
      ["total", "number", "The total including tax."],
      ["account_code", "string", "The ledger account to post to."],
      ["period_start", "date", "First day of the reporting period."],
      ["period_end", "date", "Last day of the reporting period."],
      ["memo", "string", "A note for the bookkeeper."],
      ["tax_included", "boolean", "Whether amounts include tax."],
    ],
  },
  files: {
    objects: [
      "file",
      "folder",
      "document",
      "permission",
      "share link",
      "revision",
      "comment",
      "shortcut",
      "drive",
      "page",
    ],
    verbs: ["upload", "download", "share", "rename", "lock", "convert", "unshare"],
    fields: [
      ["name", "string", "The file or folder name."],
      ["parent_folder", "string", "The folder to put it in; the root when absent."],
      ["mime_type", "string", "The content type, for example application/pdf."],
      ["content", "string", "The file's content, base64-encoded."],
      ["role", ["viewer", "commenter", "editor", "owner"], "What the person may do with it."],
      ["share_with", "string", "Email address of the person to share with."],
      ["recursive", "boolean", "Include everything inside subfolders."],
    ],
  },
  calendar: {
    objects: [
      "event",
      "meeting",
      "attendee",
      "calendar",
      "availability",
      "reminder",
      "room",
      "time slot",
      "invitation",
    ],
    verbs: ["schedule", "reschedule", "cancel", "invite", "accept", "decline", "book"],
    fields: [
      ["start_time", "date", "When it starts, ISO 8601 with a time zone."],
      ["end_time", "date", "When it ends, ISO 8601 with a time zone."],
      ["attendees", "array", "Email addresses of the people to invite."],
      ["location", "string", "Where it happens: a room, an address or a video link."],
      ["time_zone", "string", "An IANA time zone, for example Europe/Paris."],
      ["duration_minutes", "integer", "How long it lasts, in minutes."],
      ["send_updates", ["all", "external_only", "none"], "Who is emailed about the change."],
    ],
  },
  commerce: {
    objects: [
      "order",
      "product",
      "inventory item",
      "cart",
      "discount",
      "shipment",
      "fulfillment",
      "collection",
      "variant",
    ],
    verbs: ["fulfill", "ship", "cancel", "restock", "apply", "refund", "publish"],
    fields: [
      ["sku", "string", "The stock keeping unit of the product variant."],
      ["quantity", "integer", "How many units."],
      ["location_id", "string", "The warehouse or store the stock is at."],
      ["tracking_number", "string", "The carrier's tracking number."],
      ["price", "number", "The price before tax and discounts."],
      ["financial_status", ["pending", "paid", "refunded", "voided"], "Only orders in this payment state."],
      ["notify_customer", "boolean", "Email the customer about it."],
    ],
  },
  analytics: {
    objects: ["report", "dashboard", "metric", "query", "dataset", "event", "segment", "funnel", "chart", "cohort"],
    verbs: ["run", "schedule", "visualize", "compare", "summarize", "refresh"],
    fields: [
      ["from_date", "date", "Start of the time range."],
      ["to_date", "date", "End of the time range."],
      ["event_name", "string", "The tracked event, for example signup_completed."],
      ["group_by", "string", "A property to break the results down by."],
      ["interval", ["hour", "day", "week", "month"], "The size of each bucket."],
      ["sql", "string", "The query, in the warehouse's SQL dialect."],
      ["filters", "array", "Property filters, each as property=value."],
    ],
  },
  monitoring: {
    objects: [
      "alert",
      "incident",
      "monitor",
      "log entry",
      "trace",
      "service",
      "on-call schedule",
      "status page",
      "host",
    ],
    verbs: ["acknowledge", "resolve", "mute", "escalate", "trigger", "silence", "snooze"],
    fields: [
      ["severity", ["critical", "error", "warning", "info"], "How severe the alert is."],
      ["service_name", "string", "The service as it appears in the service catalog."],
      ["environment", ["production", "staging", "development"], "Which environment."],
      ["message", "string", "What happened, as the responder will read it."],
      ["since", "date", "Only entries since this moment."],
      ["urgency", ["high", "low"], "How soon someone must respond."],
      ["escalation_policy", "string", "The escalation policy to page."],
    ],
  },
  social: {
    objects: ["post", "comment", "follower", "profile", "mention", "hashtag", "story", "direct message", "poll"],
    verbs: ["publish", "like", "share", "follow", "reply to", "pin", "unfollow"],
    fields: [
      ["text", "string", "The text of the post, up to the network's limit."],
      ["media_urls", "array", "Links to images or videos to attach."],
      ["handle", "string", "The account's handle, without the @."],
      ["visibility", ["public", "followers", "private"], "Who can see it."],
      ["scheduled_at", "date", "When to publish it; now when absent."],
      ["language", "string", "The post's language, as a BCP 47 tag."],
    ],
  },
  media: {
    objects: ["playlist", "track", "video", "album", "podcast episode", "artist", "subtitle", "caption", "queue"],
    verbs: ["play", "pause", "upload", "queue", "transcribe", "skip"],
    fields: [
      ["title", "string", "The title shown to listeners or viewers."],
      ["artist_name", "string", "The performing artist."],
      ["genre", "string", "A genre, for example jazz or documentary."],
      ["duration_seconds", "integer", "Length in seconds."],
      ["privacy", ["public", "unlisted", "private"], "Who can find and watch it."],
      ["device_id", "string", "The speaker or player to use; the active one when absent."],
    ],
  },
  maps: {
    objects: ["place", "route", "location", "review", "direction", "address", "distance matrix", "photo", "business"],
    verbs: ["geocode", "reverse geocode", "route", "rate", "locate"],
    fields: [
      ["latitude", "number", "Latitude in decimal degrees."],
      ["longitude", "number", "Longitude in decimal degrees."],
      ["radius_meters", "integer", "How far from the point to look, in meters."],
      ["origin", "string", "Where the trip starts: an address or coordinates."],
      ["destination", "string", "Where the trip ends: an address or coordinates."],
      ["travel_mode", ["driving", "walking", "bicycling", "transit"], "How the trip is made."],
      ["open_now", "boolean", "Only places open at this moment."],
    ],
  },
  hr: {
    objects: [
      "employee",
      "candidate",
      "job posting",
      "interview",
      "timesheet",
      "leave request",
      "payroll run",
      "department",
      "offer letter",
      "performance review",
    ],
    verbs: ["hire", "onboard", "approve", "reject", "schedule", "terminate", "promote"],
    fields: [
      ["employee_id", "string", "The employee's id in the HR system."],
      ["job_title", "string", "The position's title."],
      ["start_date", "date", "The first day of work."],
      ["manager_email", "string", "Email address of the person's manager."],
      ["leave_type", ["vacation", "sick", "parental", "unpaid"], "The kind of leave."],
      ["hours", "number", "Hours worked or requested."],
      ["salary", "integer", "Yearly base salary, in the company's currency."],
    ],
  },
  support: {
    objects: ["ticket", "agent", "macro", "satisfaction rating", "conversation", "help article", "view", "escalation"],
    verbs: ["assign", "escalate", "close", "reply to", "merge", "solve", "reopen"],
    fields: [
      ["requester_email", "string", "Email address of the customer who asked."],
      ["ticket_status", ["new", "open", "pending", "solved", "closed"], "The ticket's status."],
      ["public_reply", "boolean", "Whether the customer sees the comment."],
      ["group", "string", "The support group to route it to."],
      ["comment", "string", "The reply or internal note."],
      ["tags", "array", "Tags to put on the ticket."],
    ],
  },
  marketing: {
    objects: [
      "campaign",
      "audience",
      "segment",
      "subscriber",
      "email template",
      "mailing list",
      "landing page",
      "form submission",
      "newsletter",
    ],
    verbs: ["send", "schedule", "subscribe", "unsubscribe", "launch", "pause", "test"],
    fields: [
      ["list_id", "string", "The mailing list or audience id."],
      ["subject_line", "string", "The subject subscribers see in their inbox."],
      ["from_name", "string", "The sender name subscribers see."],
      ["send_at", "date", "When to send it; now when absent."],
      ["double_opt_in", "boolean", "Ask the subscriber to confirm by email."],
      ["merge_fields", "object", "Values for the template's merge tags."],
    ],
  },
  database: {
    objects: ["table", "row", "record", "schema", "index", "query", "view", "collection", "backup", "migration"],
    verbs: ["insert", "query", "upsert", "truncate", "back up", "migrate", "vacuum"],
    fields: [
      ["database", "string", "The database name."],
      ["table_name", "string", "The table, optionally schema-qualified."],
      ["where", "string", "A filter expression, for example status = 'active'."],
      ["columns", "array", "The columns to return; all when absent."],
      ["values", "object", "Column names and the values to write."],
      ["dry_run", "boolean", "Check the statement without running it."],
      ["timeout_seconds", "integer", "Stop the statement after this many seconds."],
    ],
  },
  cloud: {
    objects: [
      "instance",
      "bucket",
      "function",
      "container",
      "cluster",
      "secret",
      "domain",
      "certificate",
      "load balancer",
    ],
    verbs: ["start", "stop", "reboot", "deploy", "scale", "rotate", "provision"],
    fields: [
      ["region", "string", "The region, for example us-east-1."],
      ["instance_type", "string", "The machine size, for example t3.medium."],
      ["image", "string", "The container or machine image to run."],
      ["replicas", "integer", "How many copies to run."],
      ["bucket_name", "string", "The storage bucket's name."],
      ["key", "string", "The object key inside the bucket."],
      ["force", "boolean", "Skip the safety checks."],
    ],
  },
  weather: {
    objects: ["forecast", "weather alert", "observation", "air quality reading", "radar image", "station", "uv index"],
    verbs: ["forecast", "subscribe to"],
    fields: [
      ["city", "string", "A city name, optionally with its country code, for example Paris,FR."],
      ["units", ["metric", "imperial", "standard"], "The units of temperature and wind speed."],
      ["days", "integer", "How many days ahead."],
      ["hourly", "boolean", "Hour-by-hour figures instead of daily ones."],
    ],
  },
  travel: {
    objects: ["flight", "booking", "hotel", "itinerary", "seat", "boarding pass", "car rental", "fare", "trip"],
    verbs: ["book", "cancel", "check in", "change", "hold"],
    fields: [
      ["departure_airport", "string", "IATA code of the departure airport, for example CDG."],
      ["arrival_airport", "string", "IATA code of the arrival airport."],
      ["departure_date", "date", "The day of departure."],
      ["passengers", "integer", "How many travellers."],
      ["cabin", ["economy", "premium_economy", "business", "first"], "The cabin class."],
      ["confirmation_code", "string", "The booking's confirmation code."],
    ],
  },
  telephony: {
    objects: [
      "text message",
      "phone call",
      "phone number",
      "voicemail",
      "recording",
      "conference",
      "verification code",
    ],
    verbs: ["send", "place", "forward", "verify", "look up", "transcribe"],
    fields: [
      ["to", "string", "The recipient's phone number in E.164 format."],
      ["from", "string", "The sending number, one the account owns."],
      ["body", "string", "The text of the message, up to 1,600 characters."],
      ["media_url", "string", "An image to send as MMS."],
      ["status_callback", "string", "A URL told about each status change."],
      ["channel", ["sms", "voice", "whatsapp", "email"], "How the code is delivered."],
    ],
  },
  signing: {
    objects: ["envelope", "signer", "template", "document", "signature request", "audit trail"],
    verbs: ["send", "sign", "void", "remind", "download", "resend"],
    fields: [
      ["signer_email", "string", "Email address of the person who signs."],
      ["signer_name", "string", "The signer's full name."],
      ["email_subject", "string", "The subject of the signing request email."],
      ["routing_order", "integer", "The order in which signers receive it."],
      ["expires_in_days", "integer", "Days before the request expires."],
    ],
  },
};

/** Parameters any tool may take. */
const GENERIC_FIELDS = [
  ["query", "string", "Free-text search terms."],
  ["limit", "integer", "The most results to return."],
  ["cursor", "string", "The cursor from the previous page's answer."],
  ["include_archived", "boolean", "Include archived items."],
  ["sort", ["created", "updated", "name", "relevance"], "How results are ordered."],
  ["order", ["asc", "desc"], "Ascending or descending."],
  ["workspace_id", "string", "The workspace or team the request applies to."],
  ["user_id", "string", "Act on behalf of this user."],
  ["fields", "array", "Which fields to return; all when absent."],
  ["format", ["json", "csv", "pdf", "xlsx"], "The format of the export."],
  ["updated_since", "date", "Only items changed after this moment."],
  ["notify", "boolean", "Send the usual notifications."],
  ["metadata", "object", "Key-value pairs stored with the item."],
  ["idempotency_key", "string", "A key that makes retrying the request safe."],
];

/** Toolkits: name, the kinds of service they are (objects from each), how big a share of the catalog they get. */
const TOOLKITS = [
  ["Outlook", ["mail", "calendar"]],
  ["ProtonMail", ["mail"]],
  ["Slack", ["chat"]],
  ["Discord", ["chat", "social"]],
  ["MicrosoftTeams", ["chat", "calendar"]],
  ["Twilio", ["telephony"]],
  ["Vonage", ["telephony"]],
  ["SendGrid", ["marketing", "mail"]],
  ["Mailchimp", ["marketing"]],
  ["HubSpot", ["crm", "marketing"]],
  ["Salesforce", ["crm"]],
  ["Pipedrive", ["crm"]],
  ["Zendesk", ["support"]],
  ["Intercom", ["support", "chat"]],
  ["Freshdesk", ["support"]],
  ["Jira", ["projects"]],
  ["Linear", ["projects"]],
  ["Asana", ["projects"]],
  ["Trello", ["projects"]],
  ["Notion", ["files", "projects"]],
  ["Confluence", ["files"]],
  ["GitHub", ["code", "projects"]],
  ["GitLab", ["code"]],
  ["Bitbucket", ["code"]],
  ["Stripe", ["payments"]],
  ["PayPal", ["payments"]],
  ["Square", ["payments", "commerce"]],
  ["Shopify", ["commerce"]],
  ["WooCommerce", ["commerce"]],
  ["QuickBooks", ["accounting", "payments"]],
  ["Xero", ["accounting"]],
  ["GoogleCalendar", ["calendar"]],
  ["Calendly", ["calendar"]],
  ["Zoom", ["calendar", "media"]],
  ["Dropbox", ["files"]],
  ["Box", ["files"]],
  ["OneDrive", ["files"]],
  ["GoogleSheets", ["database", "files"]],
  ["Airtable", ["database"]],
  ["Postgres", ["database"]],
  ["Snowflake", ["database", "analytics"]],
  ["BigQuery", ["analytics", "database"]],
  ["Mixpanel", ["analytics"]],
  ["Datadog", ["monitoring", "analytics"]],
  ["PagerDuty", ["monitoring"]],
  ["Sentry", ["monitoring"]],
  ["AWS", ["cloud"]],
  ["Cloudflare", ["cloud"]],
  ["Vercel", ["cloud", "code"]],
  ["Spotify", ["media"]],
  ["YouTube", ["media", "social"]],
  ["Mastodon", ["social"]],
  ["LinkedIn", ["social", "hr"]],
  ["Reddit", ["social"]],
  ["GoogleMaps", ["maps"]],
  ["Yelp", ["maps"]],
  ["Workday", ["hr"]],
  ["Greenhouse", ["hr"]],
  ["DocuSign", ["signing"]],
  ["OpenWeather", ["weather"]],
  ["Amadeus", ["travel"]],
];

/** Added to a tool's name (and its description) when a toolkit already has the plain verb + object. */
const QUALIFIERS = [
  ["ByEmail", "by email address"],
  ["InFolder", "inside a folder"],
  ["ForUser", "for a given user"],
  ["FromTemplate", "from a saved template"],
  ["InBulk", "in bulk, up to 100 at a time"],
  ["ByDate", "within a date range"],
  ["ForTeam", "for a whole team"],
  ["WithAttachments", "with their attachments"],
  ["ByStatus", "filtered by status"],
  ["ByOwner", "owned by a given person"],
  ["InWorkspace", "across a workspace"],
  ["ByTag", "that carry a tag"],
  ["ForProject", "of one project"],
  ["FromCsv", "from a CSV file"],
  ["ByName", "by name"],
  ["Recent", "changed in the last 30 days"],
  ["Shared", "shared with the caller"],
  ["Async", "as a background job"],
  ["Batch", "several at once"],
  ["Draft", "as a draft first"],
];

/** Second and third sentences of a description: `{o}` the object, `{os}` its plural, `{f}` a field, `{k}` the toolkit. */
const SENTENCES = [
  "Returns the {o}'s {f} and {f2}.",
  "Use this when the user wants to {v} {a} {o} without opening {k}.",
  "Results are sorted by {f}, newest first.",
  "Answers pages of at most 100 {os}; pass the cursor to get the next page.",
  "Fails if the {o} was deleted or the caller cannot see it.",
  "Requires the {scope} scope.",
  "Dates are ISO 8601 in UTC.",
  "Archived {os} are left out unless asked for.",
  "Only the {os} the authenticated user can access are returned.",
  "Runs as a background job and returns its id to poll.",
  "Idempotent: the same request sent twice changes nothing more.",
  "Supports filtering by {f} and by {f2}.",
  "Large {os} may take a few seconds.",
  "The owner of the {o} is notified.",
  "Counts toward the {k} API rate limit.",
  "This cannot be undone.",
  "Prefer this over listing every {o} when the {f} is known.",
  "Empty fields are left as they are.",
  "The answer includes a link to open the {o} in {k}.",
  "Works with {os} in shared workspaces too.",
  "Returns an empty list, not an error, when nothing matches.",
  "Mirrors the {k} REST endpoint of the same name.",
  "Needs an admin role for {os} the caller does not own.",
  "Useful before you {v} a {o2}.",
  "Webhooks subscribed to {os} fire afterwards.",
];

// ---- words ------------------------------------------------------------------------------------------------------------

/** Word forms, made once per word: the generator asks for the same few hundred again and again. */
function memo(form) {
  const cache = new Map();
  return (phrase) => {
    let value = cache.get(phrase);
    if (value === undefined) {
      value = form(phrase);
      cache.set(phrase, value);
    }
    return value;
  };
}
const pascal = memo((phrase) =>
  phrase
    .split(/[\s-]+/)
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join(""),
);
const snake = memo((phrase) => phrase.replace(/[\s-]+/g, "_"));
const plural = memo((phrase) => {
  const words = phrase.split(" ");
  const last = words.pop();
  if (phrase === "chart of accounts") {
    return "charts of accounts";
  }
  const irregular = { index: "indexes", matrix: "matrices", person: "people" };
  let form;
  if (irregular[last]) {
    form = irregular[last];
  } else if (/[^aeiou]y$/.test(last)) {
    form = `${last.slice(0, -1)}ies`;
  } else if (/(s|sh|ch|x|z)$/.test(last)) {
    form = `${last}es`;
  } else {
    form = `${last}s`;
  }
  return [...words, form].join(" ");
});
/** The verb's third person: `reply to` gives `replies to`. */
const thirdPerson = memo((verb) => {
  const [head, ...rest] = verb.split(" ");
  let form;
  if (/[^aeiou]y$/.test(head)) {
    form = `${head.slice(0, -1)}ies`;
  } else if (/(s|sh|ch|x|z|o)$/.test(head)) {
    form = `${head}es`;
  } else {
    form = `${head}s`;
  }
  return [form, ...rest].join(" ");
});
const article = (phrase) => (/^[aeiou]/.test(phrase) ? "an" : "a");
const capital = memo((text) => text[0].toUpperCase() + text.slice(1));

function schemaOf(type, description) {
  if (Array.isArray(type)) {
    return { type: "string", enum: type, description };
  }
  switch (type) {
    case "date":
      return { type: "string", format: "date-time", description };
    case "array":
      return { type: "array", items: { type: "string" }, description };
    case "object":
      return { type: "object", description };
    case "integer":
      return { type: "integer", minimum: 0, description };
    default:
      return { type, description };
  }
}

const ID_DESCRIPTIONS = [
  "The id of the {o}.",
  "The {o}'s unique identifier.",
  "Which {o}, by its id.",
  "The {o} to act on.",
];

/**
 * `count` tool specs (for defineTool, without `run`), the same ones for the same seed: toolkits of uneven size (a
 * few large, most small, as a real catalog's), each tool a verb and an object of its toolkit's kinds of service, a
 * description of one to three sentences and one to four described parameters.
 */
export function searchCatalogSpecs(count, seed = 33) {
  const random = prng(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  // Zipf-like shares, in a seeded order: the largest toolkit gets ~10x the smallest's tools.
  const order = TOOLKITS.map((toolkit, i) => ({ toolkit, key: random(), i })).sort((a, b) => a.key - b.key);
  const weights = order.map((_, rank) => 1 / (rank + 3) ** 0.75);
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const sizes = weights.map((weight) => Math.floor((weight / total) * count));
  for (let i = 0; sizes.reduce((sum, size) => sum + size, 0) < count; i++) {
    sizes[i % sizes.length] += 1;
  }
  const specs = [];
  order.forEach(({ toolkit: [toolkit, kinds] }, index) => {
    const domains = kinds.map((kind) => DOMAINS[kind]);
    // Each kind of service with its own verbs and parameters (its own twice as likely as the generic ones): a toolkit
    // that is a mailbox and a calendar declines invitations, not contacts.
    const kindsOf = domains.map((domain) => ({
      objects: domain.objects,
      verbs: [...GENERIC_VERBS, ...domain.verbs, ...domain.verbs],
      fields: [...domain.fields, ...domain.fields, ...GENERIC_FIELDS],
      verb: domain.verbs[0],
    }));
    const taken = new Set();
    const scope = `${toolkit.toLowerCase()}.${pick(["read", "write", "admin"])}`;
    for (let made = 0; made < sizes[index]; ) {
      const { objects, verbs, fields, verb: domainVerb } = pick(kindsOf);
      const object = pick(objects);
      const verb = pick(verbs);
      const many = LIST_VERBS.includes(verb);
      const base = `${pascal(verb)}${pascal(many ? plural(object) : object)}`;
      let name = base;
      let qualifier;
      if (taken.has(name)) {
        qualifier = pick(QUALIFIERS);
        name = `${base}${qualifier[0]}`;
        if (taken.has(name)) {
          continue;
        }
      }
      taken.add(name);
      made += 1;

      const params = [];
      const seen = new Set();
      const add = (param) => {
        if (!seen.has(param.name)) {
          seen.add(param.name);
          params.push(param);
        }
      };
      const fill = (text) =>
        text
          .replaceAll("{o}", object)
          .replaceAll("{os}", plural(object))
          .replaceAll("{a}", article(object))
          .replaceAll("{k}", toolkit);
      if (many) {
        if (verb !== "count") {
          add({
            name: "query",
            schema: schemaOf("string", `Text to match in the ${plural(object)}.`),
            required: verb === "search",
          });
        }
      } else if (verb !== "create") {
        add({ name: `${snake(object)}_id`, schema: schemaOf("string", fill(pick(ID_DESCRIPTIONS))), required: true });
      }
      const wanted = 1 + Math.floor(random() * 4);
      while (params.length < wanted) {
        const [field, type, description] = pick(fields);
        add({ name: field, schema: schemaOf(type, description), required: verb === "create" && params.length === 0 });
      }

      const fieldNames = params.map((param) => param.name.replaceAll("_", " "));
      const other = pick(objects);
      const sentence = (template) => {
        const field = pick(fieldNames);
        const others = fieldNames.filter((name) => name !== field);
        return fill(template)
          .replaceAll("{f2}", others.length > 0 ? pick(others) : "creation date")
          .replaceAll("{f}", field)
          .replaceAll("{o2}", other)
          .replaceAll("{v}", domainVerb)
          .replaceAll("{scope}", scope);
      };
      let owner = pick(objects);
      while (owner === object) {
        owner = pick(objects);
      }
      const opening = many
        ? `${capital(thirdPerson(verb))} the ${plural(object)} of ${article(owner)} ${owner}${qualifier ? ` ${qualifier[1]}` : ""}`
        : pick([
            `${capital(thirdPerson(verb))} ${article(object)} ${object}${qualifier ? ` ${qualifier[1]}` : ""} in ${toolkit}`,
            `${capital(thirdPerson(verb))} one ${object}${qualifier ? ` ${qualifier[1]}` : " by its id"}`,
            `${capital(thirdPerson(verb))} ${article(toolkit.toLowerCase())} ${toolkit} ${object} for ${article(owner)} ${owner}${qualifier ? `, ${qualifier[1]}` : ""}`,
          ]);
      const sentences = [`${opening}.`];
      if (random() < 0.7) {
        sentences.push(sentence(pick(SENTENCES)));
      }
      if (random() < 0.3) {
        sentences.push(sentence(pick(SENTENCES)));
      }
      const required = params.filter((param) => param.required).map((param) => param.name);
      const version = pick(["1.0.0", "1.0.0", "1.0.0", "1.2.0", "2.0.0", "2.1.3", "0.9.1"]);
      specs.push({
        toolkit,
        name,
        version,
        description: sentences.join(" "),
        inputSchema: {
          type: "object",
          properties: Object.fromEntries(params.map((param) => [param.name, param.schema])),
          ...(required.length > 0 ? { required } : {}),
          additionalProperties: false,
        },
        outputSchema: {
          type: "object",
          properties: many
            ? { items: { type: "array", items: { type: "object" } }, next_cursor: { type: "string" } }
            : { id: { type: "string" }, url: { type: "string" } },
          additionalProperties: true,
        },
        annotations: READ_VERBS.has(verb)
          ? { read_only: true, open_world: true }
          : { read_only: false, destructive: verb === "delete" || verb === "truncate", open_world: true },
      });
    }
  });
  return specs;
}
