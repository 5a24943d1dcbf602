/**
 * The synchronous fast path, named in one place. A call that waits for nothing (no requirement looked up, an input
 * checked at once, a synchronous tool without a call_id) is answered without a promise, from the adapter's route down
 * to the tool's return: each promise hop skipped on that path is work a busy event loop does between one request's
 * socket work and the next, with cold caches. Paid for by `OxpCore.callNow` and the route dispatch (bench/results/
 * notes.md, issue 21: native adapter 36.8 -> 30.0 us per call, 1.62x -> 1.26x the floor; two hops fewer in the
 * dispatch, part of 51.3 -> 45.6 us). Every function of ours on that path returns an {@link OrPromise}, and none other
 * does; what a user hands the server may answer either way too, as its public type says (a tool's `run`, a page, an
 * adapter's contract check).
 */

/** A value now, or a promise of it: what a step of the fast path returns. */
export type OrPromise<T> = T | Promise<T>;

/** Whether a fast-path step's value is still to come. */
export function isPending<T>(value: OrPromise<T>): value is Promise<T> {
  return value instanceof Promise;
}

/** What `step` returns or throws, as a promise: the slow path's view of a fast-path step. */
export function settledAsPromise<T>(step: () => OrPromise<T>): Promise<T> {
  try {
    return Promise.resolve(step());
  } catch (error) {
    return Promise.reject(error);
  }
}
