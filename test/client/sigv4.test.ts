import { createHash, createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolLedgerClient } from '../../client/index';
import { sigv4Signer } from '../../client/sigv4';
import {
  fakeClock,
  operationBody,
  type RecordedRequest,
  type ScriptedServer,
  startScriptedServer,
} from './support/scripted-server';

const CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};
const REGION = 'eu-west-1';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** RFC 3986 encoding as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Recomputes the signature of a received request from the SigV4 specification with node:crypto alone,
 * as API Gateway would: an independent check of what @smithy/signature-v4 produced.
 */
function expectedSignature(request: RecordedRequest, secret: string): string {
  const auth = String(request.headers.authorization);
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}$/.exec(
      auth,
    );
  if (!match) throw new Error('malformed Authorization header');
  const [, , date, region, service, signedHeaders] = match as unknown as string[];
  const url = new URL(request.url, 'http://placeholder');
  // Non-S3 services: each path segment is encoded again on top of the wire encoding.
  const canonicalPath = url.pathname
    .split('/')
    .map((segment) => uriEncode(segment))
    .join('/');
  const canonicalQuery = [...url.searchParams]
    .map(([k, v]) => [uriEncode(k), uriEncode(v)])
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const names = signedHeaders!.split(';');
  const canonicalHeaders = names
    .map((name) => `${name}:${String(request.headers[name]).trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const payloadHash = createHash('sha256').update(request.body, 'utf8').digest('hex');
  const canonicalRequest = [
    request.method,
    canonicalPath,
    canonicalQuery,
    canonicalHeaders,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const amzDate = String(request.headers['x-amz-date']);
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonicalRequest, 'utf8').digest('hex'),
  ].join('\n');
  let key: Buffer = createHmac('sha256', `AWS4${secret}`).update(date!).digest();
  for (const part of [region!, service!, 'aws4_request'])
    key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

function signatureOf(request: RecordedRequest): string {
  return /Signature=([0-9a-f]{64})$/.exec(String(request.headers.authorization))![1]!;
}

describe('sigv4Signer', () => {
  it('signs each request for execute-api so that the received request verifies', async () => {
    server = await startScriptedServer(() => ({
      status: 201,
      json: operationBody('run-9:s1:c0', 'succeeded'),
    }));
    const clock = fakeClock(Date.UTC(2025, 0, 2, 3, 4, 5));
    const client = new ToolLedgerClient({
      endpoint: `${server.url}/prod`,
      signer: sigv4Signer({ region: REGION, credentials: CREDENTIALS, clock }),
      clock,
    });
    await client.call({
      operationId: 'run-9:s1:c0',
      tool: 'webhook.post',
      arguments: { url: 'http://x', json: {} },
    });
    await client.get('run-9:s1:c0', { includeArguments: true });

    for (const request of server.requests) {
      expect(request.headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20250102\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$/,
      );
      expect(request.headers['x-amz-date']).toBe('20250102T030405Z');
      expect(request.headers['x-amz-content-sha256']).toBe(
        createHash('sha256').update(request.body).digest('hex'),
      );
      expect(signatureOf(request)).toBe(expectedSignature(request, CREDENTIALS.secretAccessKey));
    }
    const post = server.requests[0]!;
    expect(String(post.headers.authorization)).toContain(
      'SignedHeaders=accept;content-type;host;idempotency-key;x-amz-content-sha256;x-amz-date,',
    );
    expect(server.requests[1]!.url).toBe('/prod/v1/operations/run-9%3As1%3Ac0?include=arguments');
  });

  it('gives a different signature when the body changes, and a wrong secret does not verify', async () => {
    server = await startScriptedServer(() => ({
      status: 201,
      json: operationBody('run-9:s1:c0', 'succeeded'),
    }));
    const clock = fakeClock();
    const client = new ToolLedgerClient({
      endpoint: server.url,
      signer: sigv4Signer({ region: REGION, credentials: CREDENTIALS, clock }),
      clock,
    });
    await client.call({ operationId: 'run-9:s1:c0', tool: 'webhook.post', arguments: { n: 1 } });
    await client.call({ operationId: 'run-9:s1:c0', tool: 'webhook.post', arguments: { n: 2 } });
    const [first, second] = server.requests;
    expect(signatureOf(first!)).not.toBe(signatureOf(second!));
    expect(signatureOf(first!)).toBe(expectedSignature(first!, CREDENTIALS.secretAccessKey));
    expect(signatureOf(first!)).not.toBe(expectedSignature(first!, 'another-secret'));
    // The same request signed at the same instant is the same signature: the signer adds nothing random.
    await client.call({ operationId: 'run-9:s1:c0', tool: 'webhook.post', arguments: { n: 1 } });
    expect(signatureOf(server.requests[2]!)).toBe(signatureOf(first!));
  });

  it('sends the session token of temporary credentials and signs it', async () => {
    server = await startScriptedServer(() => ({
      status: 201,
      json: operationBody('run-9:s1:c0', 'succeeded'),
    }));
    const clock = fakeClock();
    const client = new ToolLedgerClient({
      endpoint: server.url,
      signer: sigv4Signer({
        region: REGION,
        credentials: async () => ({ ...CREDENTIALS, sessionToken: 'FQoGZXIvYXdzEXAMPLE' }),
        clock,
      }),
      clock,
    });
    await client.call({ operationId: 'run-9:s1:c0', tool: 'webhook.post', arguments: {} });
    const request = server.requests[0]!;
    expect(request.headers['x-amz-security-token']).toBe('FQoGZXIvYXdzEXAMPLE');
    expect(String(request.headers.authorization)).toContain('x-amz-security-token');
    expect(signatureOf(request)).toBe(expectedSignature(request, CREDENTIALS.secretAccessKey));
  });
});
