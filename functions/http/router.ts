/** A route's address: a method and a path pattern whose `{name}` segments capture one raw segment. */
export interface RouteSpec {
  method: string;
  pattern: string;
}

/** What a method and path resolve to. */
export type RouteMatch<R extends RouteSpec> =
  | { kind: 'found'; route: R; params: Record<string, string> }
  | { kind: 'not_found' }
  | { kind: 'method_not_allowed'; allow: string[] };

/**
 * Matches a method and a raw (still percent-encoded) path against routes. Captured segments are
 * returned raw: the path is split on `/` before anything is decoded, so an encoded `%2F` stays inside
 * its segment, and each route decides how to decode and validate what it captured. A path some route
 * knows under other methods is `method_not_allowed` with the methods it does allow.
 *
 * @example
 * ```ts
 * matchRoute([{ method: 'GET', pattern: '/v1/operations/{id}' }], 'GET', '/v1/operations/run%2F42');
 * // { kind: 'found', route, params: { id: 'run%2F42' } }
 * ```
 */
export function matchRoute<R extends RouteSpec>(
  routes: readonly R[],
  method: string,
  path: string,
): RouteMatch<R> {
  const segments = path.split('/');
  const allow = new Set<string>();
  for (const route of routes) {
    const params = matchPattern(route.pattern.split('/'), segments);
    if (!params) continue;
    if (route.method === method) return { kind: 'found', route, params };
    allow.add(route.method);
  }
  return allow.size === 0 ? { kind: 'not_found' } : { kind: 'method_not_allowed', allow: [...allow] };
}

function matchPattern(pattern: string[], segments: string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i] as string;
    const got = segments[i] as string;
    if (want.startsWith('{') && want.endsWith('}')) {
      if (got === '') return undefined;
      params[want.slice(1, -1)] = got;
    } else if (want !== got) {
      return undefined;
    }
  }
  return params;
}
