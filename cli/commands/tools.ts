import type { Command } from '../command';
import { clean, table } from '../format';

/** `tool-ledger tools`: the deployment's tools and their flags (`GET /v1/tools`). */
export const toolsCommand: Command = {
  name: 'tools',
  summary: 'list the tools the ledger runs, with their flags',
  usage: 'tools',
  description:
    'Lists the deployment’s tools: name, effect, whether a human must approve, timeout, attempts and\n' +
    'the first sentence of its description. --json adds the whole description and each tool’s JSON\n' +
    'Schema. Any role may read it.',
  options: {},
  args: { min: 0, max: 0 },
  async run({ api, json, out }) {
    const tools = await (await api()).tools();
    if (json) {
      out.json({ tools });
      return;
    }
    if (tools.length === 0) {
      out.print('no tools');
      return;
    }
    out.print(
      table(
        ['NAME', 'EFFECT', 'APPROVAL', 'TIMEOUT', 'ATTEMPTS', 'DESCRIPTION'],
        tools.map((tool) => [
          clean(tool.name),
          clean(String(tool.effect)),
          tool.requires_approval ? 'required' : '-',
          `${Number(tool.timeout_ms) / 1000}s`,
          String(tool.max_attempts),
          clean(firstSentence(String(tool.description ?? ''))),
        ]),
      ),
    );
  },
};

/** A table row stays one line: the rest of a description is in `--json`. */
function firstSentence(text: string): string {
  const end = text.search(/\.\s/);
  return end < 0 ? text : text.slice(0, end + 1);
}
