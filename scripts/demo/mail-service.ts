import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The demo's mail service on 127.0.0.1: what the AI SDK agent's write tool calls. It keeps every
 * message it sends with the `Idempotency-Key` it came with, so the effect is counted where it lands and
 * an agent can ask it afterwards whether a send under a key happened (its `reconcile`). It does not
 * dedupe: a second send is a second email, as with most real services.
 *
 * | route | answer |
 * | --- | --- |
 * | `POST /send` `{to, text}` | sends, 200 `{messageId}` |
 * | `GET /sent/<key>` | 200 `{messageId}` for the message sent under that key, or 404 |
 */
export interface MailService {
  url: string;
  /** Every message sent, in order. */
  readonly sent: readonly { messageId: string; to: string; key: string | undefined }[];
  close(): Promise<void>;
}

export async function startMailService(): Promise<MailService> {
  const sent: { messageId: string; to: string; key: string | undefined }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'POST' && path === '/send') {
        const { to } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { to?: string };
        const header = req.headers['idempotency-key'];
        const message = {
          messageId: `msg-${sent.length + 1}`,
          to: to ?? '',
          key: typeof header === 'string' ? header : undefined,
        };
        sent.push(message);
        return answer(200, { messageId: message.messageId });
      }
      if (req.method === 'GET' && path.startsWith('/sent/')) {
        const key = decodeURIComponent(path.slice('/sent/'.length));
        const found = sent.find((m) => m.key === key);
        return found ? answer(200, { messageId: found.messageId }) : answer(404, { found: false });
      }
      answer(404, { error: 'no such route' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
