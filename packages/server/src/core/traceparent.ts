/** Parses the W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/#traceparent-header), for the call's trace id and its span's parent. */

/** What a valid `traceparent` names. */
export interface Traceparent {
  /** Two lowercase hex digits: `00` today. */
  version: string;
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** The caller's span: 16 lowercase hex digits, not all zero. */
  parentId: string;
  /** The trace flags, a byte (bit 0: sampled). */
  traceFlags: number;
}

/**
 * Version, trace id, parent id, flags: lowercase hex only (the spec's HEXDIGLC), and after the flags either the end
 * or, from a later version, a dash and fields this version does not know.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;

/**
 * The parts of a `traceparent` header, or undefined when it is missing or invalid: version `ff`, a version `00`
 * header with anything after its flags, an all-zero trace or parent id, or uppercase hex. A later version is read
 * as far as version `00` goes, as the spec asks.
 */
export function parseTraceparent(header: string | undefined): Traceparent | undefined {
  const match = header === undefined ? null : TRACEPARENT.exec(header.trim());
  if (!match) {
    return undefined;
  }
  const [, version = "", traceId = "", parentId = "", flags = "", rest] = match;
  if (version === "ff" || (version === "00" && rest !== undefined)) {
    return undefined;
  }
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(parentId)) {
    return undefined;
  }
  return { version, traceId, parentId, traceFlags: Number.parseInt(flags, 16) };
}
