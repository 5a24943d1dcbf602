// The error a store's lock gives when it cannot be had in time: @otc/server's, which every ConnectionStore throws,
// re-exported so that this package's public API names it as before. From @otc/server/node, as every import of this
// package: @otc/server itself loads Express, which a project without an Express server does not install.
export { ConnectionLockTimeoutError } from "@otc/server/node";
