import { tmpdir } from 'node:os';
import path from 'node:path';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TOOLS_MODULE, esbuildOptions, HANDLER_ENTRIES } from '../../lib/bundling';
import { bundleOutputs, staticallyReached, totalBytes } from '../../scripts/bundle-outputs';

/*
 * What a handler evaluates when its bundle is imported (a Lambda cold start), read from esbuild's
 * metafile for the bundles the construct ships: modules reached from the entry by static imports only,
 * and the output files a cold start loads (the entry and the chunks it imports statically). Powertools
 * idempotency (read tools) is in a chunk of its own that loads at the first read, and zod's JSON Schema
 * generator (describing tools) is bundled into the API alone.
 */

async function metafileOf(entry: string): Promise<Metafile> {
  const result = await build({
    ...esbuildOptions(
      entry,
      { toolsModule: DEFAULT_TOOLS_MODULE, bundleAwsSdk: false },
      path.join(tmpdir(), 'tool-ledger-cold-path'),
    ),
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  return result.metafile;
}

/** Inputs reached from the entry through static imports; a dynamic import is where loading waits. */
function inputsReached(meta: Metafile, entry: string): Set<string> {
  const start = Object.keys(meta.inputs).find((input) => entry.endsWith(input));
  if (!start) throw new Error(`entry ${entry} not among the inputs`);
  return staticallyReached(meta.inputs, start);
}

const IDEMPOTENCY = /@aws-lambda-powertools\/idempotency\//;
const JSON_SCHEMA = /zod\/v4\/core\/to-json-schema\.js$/;

describe('what a cold start evaluates', () => {
  it.each(['api', 'executor', 'reconciler'] as const)(
    '%s: Powertools idempotency is bundled but loads at the first read',
    async (name) => {
      const meta = await metafileOf(HANDLER_ENTRIES[name]);
      const inputs = Object.keys(meta.inputs);
      const reached = [...inputsReached(meta, HANDLER_ENTRIES[name])];
      expect(inputs.some((input) => IDEMPOTENCY.test(input))).toBe(true);
      expect(reached.filter((input) => IDEMPOTENCY.test(input))).toEqual([]);
      expect(reached).toContain('functions/ledger/ledger-store.ts');
      expect(reached).not.toContain('functions/ledger/read-cache.ts');
    },
    60_000,
  );

  it.each(['api', 'executor', 'reconciler'] as const)(
    '%s: Powertools idempotency is in a chunk a cold start does not load',
    async (name) => {
      const meta = await metafileOf(HANDLER_ENTRIES[name]);
      const outputs = bundleOutputs(meta);
      const idempotencyBytes = (file: string) =>
        Object.entries(meta.outputs[file]?.inputs ?? {})
          .filter(([input]) => IDEMPOTENCY.test(input))
          .reduce((sum, [, { bytesInOutput }]) => sum + bytesInOutput, 0);
      expect(outputs.atStart.map(idempotencyBytes)).toEqual(outputs.atStart.map(() => 0));
      expect(outputs.lazy.some((file) => idempotencyBytes(file) > 0)).toBe(true);
      // The lazy chunks are a real share of the bundle, not a rounding error.
      expect(totalBytes(outputs, outputs.lazy)).toBeGreaterThan(20 * 1024);
    },
    60_000,
  );

  it('zod’s JSON Schema generator is in the API bundle only', async () => {
    // What the output keeps: the metafile's inputs also list what tree shaking dropped.
    const has = async (name: keyof typeof HANDLER_ENTRIES) =>
      Object.values((await metafileOf(HANDLER_ENTRIES[name])).outputs).some((output) =>
        Object.entries(output.inputs).some(
          ([input, { bytesInOutput }]) => JSON_SCHEMA.test(input) && bytesInOutput > 0,
        ),
      );
    expect({
      api: await has('api'),
      executor: await has('executor'),
      reconciler: await has('reconciler'),
    }).toEqual({
      api: true,
      executor: false,
      reconciler: false,
    });
  }, 60_000);
});
