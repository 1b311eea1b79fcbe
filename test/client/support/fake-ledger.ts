import { createHash } from 'node:crypto';
import { operationBody, problem, type RecordedRequest, type Reply } from './scripted-server';

/**
 * A few lines of tool-ledger behaviour, in memory, for the adapter tests: the same key with the same
 * body replays, with another body conflicts; each tool answers with one documented outcome. It is
 * not the ledger (whose own tests cover it), only a stand-in with its wire format.
 *
 * - `workspace.write_file`: succeeded `{ path, bytes }`; a path starting with `/` is a 400.
 * - `webhook.post`: succeeded `{ status: 200 }`; a URL containing `/missing` is failed_terminal (404).
 * - `workspace.append_line`: 202 uncertain, reconciled to succeeded on the next GET.
 * - `workspace.delete_file`: 202 awaiting_approval.
 * - anything else: 400 tool_unknown.
 */
export function fakeLedger() {
  const operations = new Map<string, { body: string; operation: Record<string, unknown> }>();
  const runs: string[] = [];

  function respond(operation: Record<string, unknown>, replayed: boolean): Reply {
    const terminal = ['succeeded', 'failed_terminal', 'rejected'].includes(String(operation.state));
    return {
      status: terminal ? 201 : 202,
      headers: replayed && terminal ? { 'idempotent-replayed': 'true' } : {},
      json: { ...operation, replayed: replayed && terminal },
    };
  }

  function script(request: RecordedRequest): Reply {
    if (request.method === 'GET') {
      const id = decodeURIComponent(request.url.split('/').pop() ?? '');
      const entry = operations.get(id);
      if (!entry) return problem(404, 'not_found');
      if (entry.operation.state === 'uncertain') {
        entry.operation = {
          ...entry.operation,
          state: 'succeeded',
          reconciled: true,
          result: { appended: true },
        };
        entry.operation.completed_at = '2025-01-02T03:04:07.000Z';
        return {
          status: 200,
          json: { ...entry.operation, state: 'uncertain', result: null, reconciled: undefined },
        };
      }
      return { status: 200, json: entry.operation };
    }
    const id = String(request.headers['idempotency-key']).slice(1, -1);
    const { tool, arguments: args } = JSON.parse(request.body) as {
      tool: string;
      arguments: Record<string, unknown>;
    };
    const digest = `v1:${createHash('sha256').update(JSON.stringify({ tool, args })).digest('hex')}`;
    const existing = operations.get(id);
    if (existing) {
      if (existing.operation.arguments_digest !== digest) {
        return problem(422, 'idempotency_key_reused', {
          arguments_digest: existing.operation.arguments_digest,
        });
      }
      return respond(existing.operation, true);
    }
    let operation: Record<string, unknown>;
    const base = { tool, arguments_digest: digest };
    switch (tool) {
      case 'workspace.write_file':
        if (String(args.path).startsWith('/')) {
          return problem(400, 'validation_failed', {
            detail: 'the arguments do not match the tool schema',
            issues: [{ path: 'path', message: 'must be a relative path' }],
          });
        }
        operation = operationBody(id, 'succeeded', {
          ...base,
          result: { path: args.path, bytes: String(args.content).length },
        });
        break;
      case 'webhook.post':
        operation = String(args.url).includes('/missing')
          ? operationBody(id, 'failed_terminal', {
              ...base,
              error: { code: 'http_status', message: 'the target answered 404', status: 404 },
            })
          : operationBody(id, 'succeeded', { ...base, result: { status: 200 } });
        break;
      case 'workspace.append_line':
        operation = operationBody(id, 'uncertain', base);
        break;
      case 'workspace.delete_file':
        operation = operationBody(id, 'awaiting_approval', base);
        break;
      default:
        return problem(400, 'tool_unknown');
    }
    runs.push(id);
    operations.set(id, { body: request.body, operation });
    return respond(operation, false);
  }

  return { script, runs, operations };
}
