// The error a store's lock gives when it cannot be had in time: @otc/server's, which every ConnectionStore throws,
// re-exported so that this package's public API names it as before.
export { ConnectionLockTimeoutError } from "@otc/server";
