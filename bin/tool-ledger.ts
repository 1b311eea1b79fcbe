import { processIo } from '../cli/io';
import { main } from '../cli/main';

/**
 * `npx tool-ledger`: the operators' CLI (cli/main.ts) on the process's own terminal. The exit code is
 * set rather than forced, so pending output is flushed before Node exits.
 */
process.exitCode = await main(process.argv.slice(2), processIo());
