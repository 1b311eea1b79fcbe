import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promelaTransitionTable } from './transition-table';

/**
 * Regenerates `model/transitions.pml` from the state machine in `functions/domain/states.ts`.
 * `--check` writes nothing and exits 1 when the checked-in file is out of date.
 */
async function main(): Promise<void> {
  const file = path.join(import.meta.dirname, '..', '..', 'model', 'transitions.pml');
  const wanted = promelaTransitionTable();
  if (process.argv.includes('--check')) {
    const current = await readFile(file, 'utf8').catch(() => '');
    if (current !== wanted) {
      console.error('model/transitions.pml is out of date: run npx tsx scripts/verify/gen-transitions.ts');
      process.exit(1);
    }
    console.log('model/transitions.pml matches functions/domain/states.ts');
    return;
  }
  await writeFile(file, wanted);
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}

await main();
