#!/usr/bin/env node
// The `tool-ledger` bin. The project is TypeScript run by tsx, so this launcher registers tsx's ESM
// loader in-process (no second Node process, signals and exit codes stay ours) and then loads the CLI.
import { register } from 'tsx/esm/api';

register();
await import('./tool-ledger.ts');
