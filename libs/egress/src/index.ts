export { isLoopbackAddress, isPublicAddress, normalizeHost } from './addresses';
export { EgressPolicy, EgressRefused, parseAllowList, parseEndpoints } from './egress-policy';
export type { AllowList, Endpoint, Permit, Resolver } from './egress-policy';
export { EgressProxy, TAP_RUN_HEADER } from './egress-proxy';
export type { EgressProxyOptions, PlatformRoute } from './egress-proxy';
export { RedirectRefused, egressFetch, egressRequest } from './egress-http';
export type { EgressRequestInit, EgressResponse } from './egress-http';
