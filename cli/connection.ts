import { bearerToken, type RequestSigner } from '../client/signer';
import { SETTINGS } from '../functions/contract/environment';
import { tokenWithRole } from '../functions/local/local-tokens';
import { UsageError } from './usage-error';

/** Where the local stack listens by default (local mode's default: `PORT` 3000 on 127.0.0.1). */
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:3000';

/** How the CLI authenticates. Never printed: a token is a secret. */
export type Auth = { kind: 'none' } | { kind: 'token'; token: string } | { kind: 'sigv4'; region: string };

/** The API to talk to and how to sign for it. */
export interface Connection {
  /** Base URL, with the stage path on AWS (`https://abc.execute-api.eu-west-1.amazonaws.com/prod`). */
  endpoint: URL;
  auth: Auth;
}

/**
 * Where the CLI finds local mode's own tokens when none are given: the tokens spec of the data folder
 * (`TOOL_LEDGER_DATA_DIR`, else `.data` in the working folder), or undefined when there is none.
 */
export type LocalTokensSource = () => string | undefined;

/** The global options as parsed from the command line. */
export interface ConnectionOptions {
  endpoint?: string | undefined;
  token?: string | undefined;
  sigv4?: boolean | undefined;
  region?: string | undefined;
}

const EXECUTE_API_HOST = /^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com$/;

/**
 * Resolves the global options against the environment: `--endpoint` or `TOOL_LEDGER_ENDPOINT` (default
 * {@link DEFAULT_ENDPOINT}); `--token` or `TOOL_LEDGER_TOKEN` for bearer tokens (local mode); `--sigv4`
 * for IAM, with the region from `--region`, `AWS_REGION`, `AWS_DEFAULT_REGION` or an
 * `execute-api` host name. Contradictions are usage errors, decided before anything is sent.
 *
 * With none of them and an endpoint on this machine's loopback (local mode), the token of `role` from
 * local mode's data folder (`localTokens`): the one `npm start` made and printed, so that
 * `npx tool-ledger list` works against `npm start` as it is. A deployment is never sent that token.
 *
 * @example
 * ```ts
 * resolveConnection({ sigv4: true }, { AWS_REGION: 'eu-west-1', TOOL_LEDGER_ENDPOINT: url });
 * // { endpoint: URL(url), auth: { kind: 'sigv4', region: 'eu-west-1' } }
 * ```
 */
export function resolveConnection(
  options: ConnectionOptions,
  env: NodeJS.ProcessEnv,
  local?: { role: 'agent' | 'approver' | 'operator'; localTokens: LocalTokensSource },
): Connection {
  const raw = options.endpoint ?? nonEmpty(env[SETTINGS.endpoint.name]) ?? DEFAULT_ENDPOINT;
  let endpoint: URL;
  try {
    endpoint = new URL(raw);
  } catch {
    throw new UsageError('--endpoint must be an http:// or https:// URL');
  }
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') {
    throw new UsageError('--endpoint must be an http:// or https:// URL');
  }
  if (endpoint.username !== '' || endpoint.password !== '') {
    // Credentials in a URL end up in shell history and logs; there are options for them.
    throw new UsageError('--endpoint must not carry credentials: use --token or --sigv4');
  }
  if (endpoint.search !== '' || endpoint.hash !== '') {
    throw new UsageError('--endpoint must not have a query or a fragment');
  }
  if (options.sigv4) {
    if (options.token !== undefined) throw new UsageError('--token and --sigv4 exclude each other');
    const region =
      options.region ??
      nonEmpty(env.AWS_REGION) ??
      nonEmpty(env.AWS_DEFAULT_REGION) ??
      EXECUTE_API_HOST.exec(endpoint.hostname)?.[1];
    if (!region) throw new UsageError('--sigv4 needs a region: --region R or AWS_REGION');
    return { endpoint, auth: { kind: 'sigv4', region } };
  }
  if (options.region !== undefined) throw new UsageError('--region only applies with --sigv4');
  const token =
    options.token ??
    nonEmpty(env[SETTINGS.token.name]) ??
    (local && isLoopback(endpoint) ? localToken(local.localTokens, local.role) : undefined);
  if (token === undefined) return { endpoint, auth: { kind: 'none' } };
  if (token === '' || /\s/.test(token))
    throw new UsageError('--token must be a non-empty token without spaces');
  return { endpoint, auth: { kind: 'token', token } };
}

/**
 * The request signer of a connection: a bearer token, SigV4 with the default credential chain, or none.
 * The SigV4 signer (and the AWS credential chain behind it) is loaded only when asked for, so local use
 * and `--help` start quickly.
 */
export async function signerFor(auth: Auth): Promise<RequestSigner | undefined> {
  switch (auth.kind) {
    case 'token':
      return bearerToken(auth.token);
    case 'sigv4': {
      const { sigv4Signer } = await import('../client/sigv4');
      return sigv4Signer({ region: auth.region });
    }
    case 'none':
      return undefined;
  }
}

/** Whether the endpoint is on this machine's loopback, where local mode listens. */
function isLoopback(endpoint: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(endpoint.hostname.toLowerCase());
}

function localToken(source: LocalTokensSource, role: string): string | undefined {
  const spec = source();
  return spec === undefined ? undefined : tokenWithRole(spec, role);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
