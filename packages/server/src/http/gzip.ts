/** The tool list gzipped once per catalog, with the runtime's own `CompressionStream` (no `node:zlib`: it runs on every host). */

/** What is gzipped: the list's JSON text and its ETag. */
interface ToolListText {
  readonly body: string;
  readonly etag: string;
}

/** The gzipped form of a list: its bytes and an ETag of its own. */
export interface GzippedList {
  readonly body: Uint8Array;
  readonly etag: string;
}

/** Below this many bytes the tool list is sent as is: gzip would save little on it. */
const GZIP_MIN_BYTES = 1024;

/** The gzipped tool list of each catalog (keyed by the core's list), made on first request. */
const gzippedLists = new WeakMap<object, Promise<GzippedList | null>>();

/** The list gzipped, made once per list object and kept as long as the list; null for a list too small to be worth it. */
export function gzippedList(list: ToolListText): Promise<GzippedList | null> {
  let gzipped = gzippedLists.get(list);
  if (gzipped === undefined) {
    gzipped = gzipList(list);
    gzippedLists.set(list, gzipped);
  }
  return gzipped;
}

async function gzipList(list: ToolListText): Promise<GzippedList | null> {
  const plain = new TextEncoder().encode(list.body);
  if (plain.length < GZIP_MIN_BYTES) {
    return null;
  }
  const stream = new Blob([plain]).stream().pipeThrough(new CompressionStream("gzip"));
  const body = new Uint8Array(await new Response(stream).arrayBuffer());
  return { body, etag: `${list.etag.slice(0, -1)}-gzip"` };
}
