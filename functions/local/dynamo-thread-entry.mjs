// Entry of local mode's DynamoDB thread (started by dynamo-server.ts). Plain JavaScript: a worker thread
// starts without the TypeScript loader of the thread that made it (the `tool-ledger` bin registers tsx
// in its own thread only, and tests run under vitest), so this loads the thread's code through tsx.
import { tsImport } from 'tsx/esm/api';

const { runDynamoThread } = await tsImport('./dynamo-thread.ts', import.meta.url);
runDynamoThread();
