import { randomUUID } from 'node:crypto';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { downstreamKey } from '../../functions/domain/downstream-key';
import type { ToolContext } from '../../functions/domain/tool';

/** A tool context as the engine would build it, with a fresh operation ID and reservation unless given. */
export function toolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  const tenant = overrides.tenant ?? 'acme';
  const operationId = overrides.operationId ?? `op-${randomUUID()}`;
  return {
    operationId,
    tenant,
    downstreamKey: downstreamKey(tenant, operationId, randomUUID()),
    attempt: 1,
    signal: new AbortController().signal,
    logger: { info: () => undefined, warn: () => undefined },
    ...overrides,
  };
}

/**
 * A fresh temporary folder (real path) holding a workspace root, the root of tenant `acme` inside it
 * (`home`: where the workspace tools put the files of {@link toolContext}'s default tenant), and an
 * "outside" folder.
 */
export async function tempDirs(): Promise<{
  base: string;
  root: string;
  home: string;
  outside: string;
  cleanup: () => Promise<void>;
}> {
  const base = await realpath(await mkdtemp(path.join(tmpdir(), 'tool-ledger-tools-')));
  return {
    base,
    root: path.join(base, 'workspace'),
    home: path.join(base, 'workspace', 'acme'),
    outside: path.join(base, 'outside'),
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

/** What a test server saw of one request. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

/** A real HTTP server on a loopback address, recording every complete request it reads. */
export interface TestServer {
  port: number;
  origin: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

/** Starts a server whose handler runs once the request body has been read. */
export async function startServer(
  handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void,
  host = '127.0.0.1',
): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
      });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    origin: `http://${host}:${address.port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
