import { SETTINGS } from '../../functions/contract/environment';

/**
 * `npm run bench`: tool-ledger against Powertools idempotency on the same dynalite, in one run.
 *
 * | variable | meaning |
 * | --- | --- |
 * | `BENCH_SCALE` | multiplies every scenario's iterations (default 1; 0.1 for a smoke run) |
 * | `BENCH_ONLY` | comma-separated parts to run: `first`, `first-noindex`, `first-settings`, `replay`, `warm`, `conflict`, `concurrent`, `crash`, `read-first`, `read-replay`, `read-warm`, `caller`, `reconciler`, `capacity`, `local`, `cold-start`, `tracing` |
 * | `BENCH_OUT` | where the markdown goes (default `bench-results/latest.md`) |
 *
 * The environment is set before anything imports the SDK or Powertools, which read it at load time.
 */
process.env.AWS_EC2_METADATA_DISABLED ??= 'true';
// Transition logs are silenced on tool-ledger's side; this also silences the engine's own warnings
// (the crash scenario causes some on purpose). Powertools idempotency logs nothing either way.
process.env[SETTINGS.logLevel.name] ??= 'SILENT';
process.env[SETTINGS.metricsDisabled.name] ??= 'true';

const { runBench } = await import('./run-bench');
await runBench();
