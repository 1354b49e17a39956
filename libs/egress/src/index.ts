export { isLoopbackAddress, isPublicAddress } from './addresses';
export { EgressPolicy, EgressRefused } from './egress-policy';
export type { Permit, Resolver } from './egress-policy';
export { EgressProxy, TAP_RUN_HEADER } from './egress-proxy';
export type { EgressProxyOptions, PlatformRoute } from './egress-proxy';
export { RedirectRefused, egressFetch, egressRequest } from './egress-http';
export type { EgressRequestInit, EgressResponse } from './egress-http';
