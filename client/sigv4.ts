import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Clock } from './clock';
import { systemClock } from './clock';
import type { RequestSigner, SignableRequest } from './signer';

/** AWS credentials, or a provider of them (the SDK's credential providers fit). */
export type AwsCredentialsInput =
  | { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | (() => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>);

/** Options of {@link sigv4Signer}. */
export interface SigV4SignerOptions {
  /** Region of the API. */
  region: string;
  /** @default 'execute-api' (API Gateway with IAM authorization) */
  service?: string;
  /** @default the SDK's default chain (`defaultProvider()` of `@aws-sdk/credential-provider-node`) */
  credentials?: AwsCredentialsInput;
  /** Signing time source. @default the system clock */
  clock?: Clock;
}

/**
 * Signs requests with AWS Signature Version 4 for an API Gateway API using IAM authorization. The
 * body is part of the signature, which is one more reason the client never changes it between
 * attempts. `host` is signed but not returned: fetch sets it from the URL itself.
 *
 * @example
 * ```ts
 * const signer = sigv4Signer({ region: 'eu-west-1' });
 * new ToolLedgerClient({ endpoint: 'https://abc.execute-api.eu-west-1.amazonaws.com/prod', signer });
 * ```
 */
export function sigv4Signer(options: SigV4SignerOptions): RequestSigner {
  const signer = new SignatureV4({
    service: options.service ?? 'execute-api',
    region: options.region,
    credentials: options.credentials ?? defaultProvider(),
    sha256: Hash.bind(null, 'sha256'),
  });
  const clock = options.clock ?? systemClock;
  return {
    async sign(request: SignableRequest) {
      const query: Record<string, string | string[]> = {};
      for (const [key, value] of request.url.searchParams) {
        const existing = query[key];
        if (existing === undefined) query[key] = value;
        else query[key] = Array.isArray(existing) ? [...existing, value] : [existing, value];
      }
      const signed = await signer.sign(
        {
          method: request.method,
          protocol: request.url.protocol,
          hostname: request.url.hostname,
          port: request.url.port === '' ? undefined : Number(request.url.port),
          path: request.url.pathname,
          query,
          headers: { ...request.headers, host: request.url.host },
          body: request.body,
        },
        { signingDate: new Date(clock.now()) },
      );
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(signed.headers)) {
        if (name.toLowerCase() !== 'host') headers[name.toLowerCase()] = value;
      }
      return headers;
    },
  };
}
