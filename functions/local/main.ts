import { SETTINGS } from '../contract/environment';
import { greeting, readyLine } from './banner';
import { DataFolderInUseError } from './data-folder-lock';
import { localTokens } from './local-tokens';
import { dataDirOf, type LocalSettings, LocalSettingsError, loadLocalSettings } from './settings';
import type { RunningStack } from './stack';
import { useToolsModule } from './tools-module';

/**
 * `npm start`: tool-ledger on one machine (the contract, §10). Prints one ready line for scripts, then a short
 * greeting for people; stops cleanly on SIGINT and SIGTERM. Exit code 2: a setting cannot be used, the
 * tools module cannot be loaded or cannot build its tools, or the data folder is in use by another
 * process (each named on stderr); 1: any other failure to start.
 */

/** How long a stop waits for requests, batches and passes in flight (a tool's deadline plus its commit). */
const SHUTDOWN_GRACE_MS = 30_000;

/** Signals closer together than this are one stop request (npm and tsx relay the terminal's signal). */
const REPEAT_SIGNAL_MS = 1_000;

async function main(): Promise<void> {
  let settings: LocalSettings;
  let toolsModule: string | undefined;
  try {
    // No fixed default token: the data folder's own, made at its first start (local-tokens.ts).
    const given = process.env[SETTINGS.tokens.name];
    const generated =
      given === undefined || given.trim() === '' ? await localTokens(dataDirOf(process.env)) : undefined;
    settings = loadLocalSettings(process.env, process.stdout.isTTY === true, generated);
    // Read by the logger when its module loads, which is why the tools and the stack are imported only now.
    if (settings.logFormat === 'pretty') process.env[SETTINGS.powertoolsDev.name] ??= 'true';
    toolsModule = await useToolsModule(process.env[SETTINGS.toolsModule.name], process.cwd());
  } catch (error) {
    if (!(error instanceof LocalSettingsError)) throw error;
    process.stderr.write(`tool-ledger: ${error.message}\n`);
    process.exit(2);
  }
  const { startStack } = await import('./stack');
  let stack: RunningStack;
  try {
    stack = await startStack(settings, toolsModule);
  } catch (error) {
    if (!(error instanceof DataFolderInUseError || error instanceof LocalSettingsError)) throw error;
    process.stderr.write(`tool-ledger: ${error.message}\n`);
    process.exit(2);
  }

  let stopping: number | undefined;
  const stop = (signal: NodeJS.Signals) => {
    const now = Date.now();
    if (stopping !== undefined) {
      if (now - stopping < REPEAT_SIGNAL_MS) return;
      process.stderr.write(`tool-ledger: ${signal} again, stopping now\n`);
      process.exit(130);
    }
    stopping = now;
    process.stderr.write(`tool-ledger: ${signal}, stopping (again to stop at once)\n`);
    stack.stop(SHUTDOWN_GRACE_MS).then(
      (drained) => {
        if (!drained) process.stderr.write('tool-ledger: work still running was abandoned\n');
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`tool-ledger: stop failed (${error instanceof Error ? error.name : 'error'})\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  void stack.storeLost.then((error) => {
    process.stderr.write(`tool-ledger: ${error.message}; stopping\n`);
    process.exit(1);
  });

  // One write, so that no log line can land inside the ready line.
  process.stdout.write(`${readyLine(stack)}\n`);
  process.stdout.write(`${greeting(stack, settings)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `tool-ledger: could not start: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}\n`,
  );
  process.exit(1);
});
