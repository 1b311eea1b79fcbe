import { processIo } from '../cli/io';
import { main } from '../cli/main';

/**
 * `npx tool-ledger`: the operators' CLI (cli/main.ts) on the process's own terminal. The exit code is
 * set rather than forced, so pending output is flushed before Node exits. `npx tool-ledger start` runs
 * local mode, what `npm start` runs in this repository, for projects that install the package.
 */
if (process.argv[2] === 'start') {
  process.argv.splice(2, 1);
  await import('../functions/local/main');
} else {
  process.exitCode = await main(process.argv.slice(2), processIo());
}
