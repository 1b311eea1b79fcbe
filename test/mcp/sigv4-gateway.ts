import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * A stand-in for API Gateway's IAM authorization in front of a local API: every request must carry an
 * AWS Signature Version 4 that @smithy/signature-v4, given the expected credentials, region and service,
 * computes byte for byte (the body's hash included); a request that does not is answered 403 and goes
 * no further. A verified request is forwarded to the API with a bearer token in place of the
 * signature and without the stage (`/prod`), as API Gateway hands the caller's identity and the
 * resource path to the Lambda. Every request's Authorization header and verdict are kept for the test
 * to read.
 */

/** What the gateway expects of a signature. */
export interface SigV4Expectation {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  region: string;
  service: string;
}

/** One request as the gateway saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  securityToken: string | undefined;
  /** Why it was refused, or undefined when the signature verified. */
  refused: string | undefined;
}

/** A running gateway. */
export interface SigV4Gateway {
  /** The API's URL, stage included. */
  endpoint: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

/** The stage in front of every path, as in an API Gateway URL (`…/prod/mcp`). */
export const STAGE = '/prod';

/** Starts the gateway on 127.0.0.1 in front of `upstream`, forwarding with `Bearer <token>`. */
export async function startSigV4Gateway(
  expected: SigV4Expectation,
  upstream: string,
  token: string,
): Promise<SigV4Gateway> {
  const seen: SeenRequest[] = [];
  const signer = new SignatureV4({
    service: expected.service,
    region: expected.region,
    credentials: {
      accessKeyId: expected.accessKeyId,
      secretAccessKey: expected.secretAccessKey,
      sessionToken: expected.sessionToken,
    },
    sha256: Hash.bind(null, 'sha256'),
  });
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const entry: SeenRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: header(req, 'authorization'),
        securityToken: header(req, 'x-amz-security-token'),
        refused: await verify(signer, expected, req, body),
      };
      seen.push(entry);
      if (entry.refused !== undefined || !entry.path.startsWith(`${STAGE}/`)) {
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: entry.refused ?? 'Forbidden' }));
        return;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value !== 'string' || name === 'host' || name === 'connection') continue;
        if (name === 'authorization' || name.startsWith('x-amz-') || name === 'content-length') continue;
        headers[name] = value;
      }
      headers.authorization = `Bearer ${token}`;
      const answer = await fetch(new URL(entry.path.slice(STAGE.length), upstream), {
        method: req.method ?? 'GET',
        headers,
        ...(body.length === 0 ? {} : { body }),
      });
      const out: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        if (name !== 'content-length' && name !== 'transfer-encoding' && name !== 'connection')
          out[name] = value;
      });
      res.writeHead(answer.status, out);
      res.end(Buffer.from(await answer.arrayBuffer()));
    })().catch((error: unknown) => {
      res.writeHead(502);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the gateway has no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}${STAGE}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Why the request's signature does not verify, or undefined when it does. */
async function verify(
  signer: SignatureV4,
  expected: SigV4Expectation,
  req: IncomingMessage,
  body: Buffer,
): Promise<string | undefined> {
  const authorization = header(req, 'authorization');
  const match = authorization === undefined ? null : AUTHORIZATION.exec(authorization);
  if (!match) return 'no AWS4-HMAC-SHA256 Authorization header';
  const [, keyId, day, region, service, signedList] = match as unknown as string[];
  if (keyId !== expected.accessKeyId) return `signed with another key (${keyId})`;
  if (region !== expected.region || service !== expected.service) {
    return `credential scope ${region}/${service}, expected ${expected.region}/${expected.service}`;
  }
  const signedNames = (signedList as string).split(';');
  for (const required of ['host', 'x-amz-date', 'x-amz-security-token']) {
    if (!signedNames.includes(required)) return `${required} is not signed`;
  }
  const amzDate = header(req, 'x-amz-date');
  if (amzDate === undefined || !amzDate.startsWith(day as string))
    return 'x-amz-date does not match the scope';
  const declaredHash = header(req, 'x-amz-content-sha256');
  const bodyHash = createHash('sha256').update(body).digest('hex');
  if (declaredHash !== undefined && declaredHash !== bodyHash)
    return 'x-amz-content-sha256 is not the body hash';
  const headers: Record<string, string> = {};
  for (const name of signedNames) {
    const value = header(req, name);
    if (value === undefined) return `signed header ${name} is missing`;
    headers[name] = value;
  }
  const url = new URL(req.url ?? '/', `http://${header(req, 'host')}`);
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of url.searchParams) {
    const existing = query[key];
    query[key] =
      existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  const signingDate = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const recomputed = await signer.sign(
    {
      method: req.method ?? 'GET',
      protocol: 'http:',
      hostname: url.hostname,
      ...(url.port === '' ? {} : { port: Number(url.port) }),
      path: url.pathname,
      query,
      headers,
      ...(body.length === 0 ? {} : { body: body.toString('utf8') }),
    },
    { signingDate },
  );
  const want = Object.entries(recomputed.headers).find(
    ([name]) => name.toLowerCase() === 'authorization',
  )?.[1];
  return want === authorization ? undefined : 'the signature does not verify';
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}
