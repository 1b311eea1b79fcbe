import { type CallerAgentConfig, runCallerAgent } from './caller-agent';

/**
 * The caller-executed scene's agent as a process of its own (started by agent-process.ts): the config as
 * JSON in argv[2], one JSON event per stdout line. Exit 0 once the step is done, 1 on any failure.
 */

const config = JSON.parse(process.argv[2] ?? '{}') as CallerAgentConfig;
runCallerAgent(config, (event) => process.stdout.write(`${JSON.stringify(event)}\n`)).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `agent failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
