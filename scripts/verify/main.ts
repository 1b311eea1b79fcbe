import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { modelCheck } from './model-check';
import { checkTrace, printVerdict, readTraceFile } from './trace-check';

/**
 * `npm run verify`: SPIN on every property and every broken variant (scripts/verify/checks.ts), then
 * the trace checker over the transition lines of a short model-based fault suite run (whose schedules
 * also check their own lines, as in `npm test`). Exits 1 when a
 * property fails, a broken variant is not refuted, or a logged line is not allowed by the model.
 * `TOOL_LEDGER_VERIFY_RUNS` sets the schedules of the suite run (default 40 per property).
 */
async function main(): Promise<void> {
  const started = Date.now();
  const results = await modelCheck(process.argv.slice(2));
  const failed = results.filter((r) => !r.ok).map((r) => r.check.name);
  const proved = results.filter((r) => r.ok && r.check.expect === 'holds').length;
  const refuted = results.filter((r) => r.ok && r.check.expect === 'refuted').length;
  console.log(
    `model: ${proved} properties proved, ${refuted} broken variants refuted, ${failed.length} failed`,
  );

  const dir = await mkdtemp(path.join(tmpdir(), 'tool-ledger-trace-'));
  const file = path.join(dir, 'transitions.jsonl');
  try {
    const runs = process.env.TOOL_LEDGER_VERIFY_RUNS ?? '40';
    console.log(`trace: running the model-based fault suite (${runs} schedules per property) into ${file}`);
    const code = await runSuite(file, runs);
    if (code !== 0) failed.push('model-based suite');
    // The suite writes, next to each schedule's lines, how many writes of each operation landed while
    // their writer never saw the answer: the only moves allowed to be missing from the log.
    const trace = await readTraceFile(file);
    const verdict = checkTrace(trace.lines, { unlogged: (key) => trace.unlogged.get(key) ?? 0 });
    printVerdict(verdict);
    if (verdict.lines === 0 || verdict.rejected.length > 0) failed.push('trace check');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  console.log(`verify: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (failed.length > 0) {
    console.error(`verify FAILED: ${failed.join(', ')}`);
    process.exit(1);
  }
}

function runSuite(file: string, runs: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['vitest', 'run', 'test/model/ledger-model.test.ts'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, TOOL_LEDGER_TRACE_FILE: file, TOOL_LEDGER_MODEL_RUNS: runs },
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

await main();
