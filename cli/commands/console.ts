import { type Command, integerOption } from '../command';
import { startConsoleServer } from '../console/server';
import { UsageError } from '../usage-error';

/**
 * `tool-ledger console [--port N]`: the operators' console, a web page on 127.0.0.1 for the
 * reconciliation queue, one operation's history, approvals, resolutions and the tools. It runs until
 * Ctrl-C. The API calls the page makes go through this process with the CLI's own credentials, so the
 * browser holds only the per-run secret of the printed URL.
 */
export const consoleCommand: Command = {
  name: 'console',
  summary: 'open the operators’ console: the queue, histories, approvals and resolutions in a browser',
  usage: 'console [--port N]',
  description:
    'Serves the operators’ console on 127.0.0.1 and prints its URL, which carries a secret for this run\n' +
    'only: open it in a browser on this machine. The console forwards the page’s API calls with this\n' +
    'command’s credentials (--token or --sigv4), so the browser never holds them. Requests without the\n' +
    'secret, or from another Host or Origin, are refused. Ctrl-C stops it.\n\n' +
    'Roles: the queue and resolutions need operator, approvals need approver.\n\n' +
    'Options:\n' +
    '  --port N   the port on 127.0.0.1 (default: a free one)',
  options: {
    port: { type: 'string' },
  },
  args: { min: 0, max: 0 },
  async run({ api, values, out, json, untilStopped }) {
    const port = integerOption(values, 'port', 'console') ?? 0;
    if (port > 65_535) throw new UsageError('--port must be at most 65535', 'console');
    if (!untilStopped)
      throw new UsageError('the console runs until stopped, which needs a terminal', 'console');
    const server = await startConsoleServer({ api: await api(), port });
    try {
      if (json) out.json({ url: server.url, origin: server.origin, port: server.port });
      else {
        out.print(`tool-ledger console ${server.url}`);
        out.note('Open that URL in a browser on this machine (it carries this run’s secret). Ctrl-C stops.');
      }
      await untilStopped();
    } finally {
      await server.close();
    }
  },
};
