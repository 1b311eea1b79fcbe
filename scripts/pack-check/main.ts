import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SETTINGS } from '../../functions/contract/environment';
import type { ShellBlock } from '../docs/shell-blocks';
import { READY_LINE } from '../local-stack';
import {
  type ConsumerNode,
  currentNode,
  installNode22,
  NODE_22_VERSION,
  nodePackageName,
  pathFirst,
  withoutRepositoryNpmConfig,
  withoutRepositoryPath,
} from './consumer-env';
import {
  AGENT_MODULE,
  APP_MODULE,
  DOC_EXAMPLES,
  DOCS_TOOLS_EXAMPLES,
  FRAMEWORK_ENTRIES,
  FRAMEWORKS_MODULE,
  LOAD_DURABLE_MODULE,
  LOAD_FRAMEWORKS_MODULE,
  RUN_AGENT_MODULE,
  RUN_AI_SDK_MODULE,
  RUN_FRAMEWORKS_MODULE,
  TOOLS_MODULE,
  TSCONFIG_BUNDLER,
  TSCONFIG_CJS_MTS,
  TSCONFIG_NODENEXT,
} from './consumer-files';
import { curlCall, entryFiles, packCheckBlocks, publishReport, QUIET_NPM, startBlock } from './from-clone';
import { internalPointers } from './internal-pointers';

/**
 * `npm run pack-check`: the packages as a user receives them, from a fresh clone of the committed
 * repository. In the clone it runs the README's install commands as written (`npm ci`, then `npm pack`
 * of both packages, which builds them through `prepack`), under the clone's own .npmrc and with npm on
 * the machine's Node, as a user's shell has them; then `npm publish --dry-run` of both (every `exports`
 * and `bin` target, the README, LICENSE and CHANGELOG ship; no warning; public, with provenance). In a
 * project next to the clone it runs the README's `npm install` of the two tarballs as written. In scratch
 * projects it installs the tarballs with the SDKs, CDK and TypeScript; checks that a token-only client
 * install pulls in neither aws-cdk-lib, the AWS SDK nor any agent framework, that no Node binary rides
 * along, and that neither installed package cites the internal design brief (scripts/pack-check/internal-pointers.ts).
 *
 * The packages are installed once, and every consumer then runs on both Node lines the packages
 * declare: Node 22 from the registry and the repository's Node 24 (scripts/pack-check/consumer-env.ts).
 * On each: the tools page's local run as written in the project next to the clone (`npx tool-ledger
 * start` with the page's tools module; the banner's call is the page's call, key for key; two calls, one
 * effect); a consumer type-checked under NodeNext and bundler resolution (strict, no casts) that uses the
 * client, the three adapters with the real SDK types, and custom tools (the docs' tools examples among
 * them) and the docs' agent examples (`DOC_EXAMPLES`: the durable function and its stack, AI SDK, Mastra,
 * OpenAI Agents, LangChain); the `/durable` entry and every framework entry (`FRAMEWORK_ENTRIES`) loaded
 * with their frameworks; a stack synthesized with that tool (real esbuild bundling); the client against
 * local mode started with it, and an AI SDK agent, an OpenAI Agents step and a LangGraph step through the
 * packed entries against it, each step run twice with one effect; and, in a CommonJS project (`"type": "commonjs"`, what npm 11's `npm init` writes), a
 * `.ts` tools module refused with what to change while a `.mts` one type-checks and runs. Each check that
 * runs the packages' code says which Node it ran on. Exits 1 on the first check that fails.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const rootPackage = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
/** The versions this repository is tested with, so the scratch installs resolve from npm's cache. */
const pinned = { ...rootPackage.dependencies, ...rootPackage.devDependencies };

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  return exitOf(cmd, args, cwd, env).then(({ code, out }) => {
    if (code === 0) return out;
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${code}:\n${out}`);
  });
}

/** Runs a command to its end and returns its exit code and output (stdout and stderr), whatever it is. */
function exitOf(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd,
      env: { ...withoutRepositoryNpmConfig(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.once('exit', (code) => resolve({ code, out }));
  });
}

/** The last non-empty line of a command's output: where the consumer scripts print their JSON. */
function lastLine(out: string): string {
  return out.trim().split('\n').at(-1) ?? '';
}

/** The last line that is a JSON object, for scripts whose libraries may log after it. */
function lastJsonLine(out: string): string {
  return (
    out
      .trim()
      .split('\n')
      .findLast((line) => line.startsWith('{')) ?? ''
  );
}

function step(name: string): void {
  process.stdout.write(`pack-check: ${name}\n`);
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`pack-check failed: ${message}`);
  process.stdout.write(`  ok  ${message}\n`);
}

const INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];

/** Starts `npx tool-ledger start` in the consumer and resolves with the API URL once it is ready. */
function startLocalMode(
  cwd: string,
  dataDir: string,
  env: NodeJS.ProcessEnv,
  toolsModule = 'tools/index.ts',
): Promise<{ api: string; child: ChildProcess }> {
  const child = spawn('npx', ['tool-ledger', 'start'], {
    cwd,
    env: {
      ...withoutRepositoryNpmConfig(),
      ...env,
      PORT: '0',
      [SETTINGS.dataDir.name]: dataDir,
      [SETTINGS.toolsModule.name]: toolsModule,
      [SETTINGS.logFormat.name]: 'json',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stderr?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      for (const line of out.split('\n')) {
        const match = READY_LINE.exec(line);
        if (match) resolve({ api: match[1] as string, child });
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`local mode exited (${code}) before it was ready:\n${out}`)),
    );
  });
}

/** The scratch projects, installed once and then run on each Node. */
interface Consumers {
  scratch: string;
  /** The project next to the clone, with the tarballs installed as the README says. */
  project: string;
  tokenOnly: string;
  consumer: string;
  cjs: string;
}

/** Local mode started by a check, stopped by main's `finally` if the check fails first. */
let local: ChildProcess | undefined;

/**
 * The environment of the commands the docs give a user, run as written: no npm settings of this
 * repository (a clone reads its own .npmrc) and no `node_modules/.bin` of this repository on PATH (npm
 * runs on the machine's Node), with npm on its cache first.
 */
function asAUser(): NodeJS.ProcessEnv {
  return { ...withoutRepositoryPath(withoutRepositoryNpmConfig()), ...QUIET_NPM };
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(path.join(tmpdir(), 'tool-ledger-pack-check-'));
  try {
    step(`install Node ${NODE_22_VERSION} from the registry (${nodePackageName()}) into the scratch folder`);
    const nodes = [await installNode22(path.join(scratch, 'node-22'), INSTALL), await currentNode()];
    check(
      nodes.map((n) => n.version.split('.')[0]).join(' ') === 'v22 v24',
      `consumers run on Node ${nodes.map((n) => n.version).join(' and ')}`,
    );
    const consumers = await install(scratch);
    for (const node of nodes) await runConsumers(consumers, node);
    process.stdout.write(
      `pack-check: all checks passed on Node ${nodes.map((n) => n.version).join(' and ')}\n`,
    );
  } finally {
    stopGroup(local);
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Packs both packages in a fresh clone as the README says, checks what they would publish, installs
 * them into the project next to the clone and the scratch projects, checks what was installed.
 */
async function install(scratch: string): Promise<Consumers> {
  step('a fresh clone: the install commands of the README, as written');
  const clone = path.join(scratch, 'clone');
  await run('git', ['clone', '--quiet', '--local', ROOT, clone], scratch);
  const installBlocks = await packCheckBlocks(ROOT, 'README.md');
  const installPage = await packCheckBlocks(ROOT, 'docs/install.md');
  check(
    installBlocks.length === 2 &&
      installPage.map((b) => b.script).join('\n') === installBlocks.map((b) => b.script).join('\n'),
    'the README and docs/install.md give the same two install blocks',
  );
  // `npm ci` under the clone's own .npmrc, then `npm pack` of both packages into the clone's parent:
  // packing builds them (prepack), with the clone's own tools.
  await run('bash', ['-e', '-c', (installBlocks[0] as ShellBlock).script], clone, asAUser());
  const tarballs = (await readdir(scratch)).filter((f) => f.endsWith('.tgz'));
  const ledgerTgz = tarballs.find((f) => f.startsWith('tool-ledger-0'));
  const clientTgz = tarballs.find((f) => f.startsWith('tool-ledger-client-'));
  check(ledgerTgz !== undefined && clientTgz !== undefined, `two tarballs packed (${tarballs.join(', ')})`);

  step('npm publish --dry-run of both packages: what they declare is what they ship');
  for (const [dir, workspace] of [
    ['', []],
    ['client', ['-w', '@tool-ledger/client']],
  ] as const) {
    const manifest = JSON.parse(await readFile(path.join(clone, dir, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      files: string[];
      exports?: unknown;
      bin?: unknown;
      engines?: { node?: string };
      license?: string;
      publishConfig?: { access?: string; provenance?: boolean };
    };
    // Already built by the pack above; the dry run lists the files (npm notices, which the clone's
    // .npmrc silences) and says what it would publish.
    const report = publishReport(
      (
        await exitOf(
          'npm',
          ['publish', '--dry-run', '--ignore-scripts', '--loglevel=notice', ...workspace],
          clone,
          asAUser(),
        )
      ).out,
    );
    check(
      report.complaints.length === 0,
      `${manifest.name}: no warning or error (${report.complaints.join('; ') || 'none'})`,
    );
    const missing = [...entryFiles(manifest), 'README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'].filter(
      (f) => !report.files.includes(f),
    );
    check(
      missing.length === 0,
      `${manifest.name}@${manifest.version}: every entry, README, LICENSE and CHANGELOG ship (missing: ${missing.join(', ') || 'none'})`,
    );
    check(
      !report.files.some(
        (f) => f.includes('.test.') || f.startsWith('docs/.vitepress') || f.startsWith('examples/'),
      ),
      `${manifest.name}: no tests, docs site or examples in the package (${report.files.length} files)`,
    );
    const changelog = await readFile(path.join(clone, dir, 'CHANGELOG.md'), 'utf8');
    check(
      changelog.includes(`## ${manifest.version}`) &&
        manifest.engines?.node !== undefined &&
        manifest.license === 'Apache-2.0',
      `${manifest.name}: the CHANGELOG has ${manifest.version}, engines and license are declared`,
    );
    check(
      manifest.publishConfig?.access === 'public' && manifest.publishConfig.provenance === true,
      `${manifest.name}: published public, with provenance`,
    );
  }

  step("a project next to the clone: the README's install command, as written");
  const project = path.join(scratch, 'my-project');
  await mkdir(path.join(project, 'tools'), { recursive: true });
  await writeFile(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'my-project', version: '1.0.0', private: true, type: 'module' }, null, 2),
  );
  await run('bash', ['-e', '-c', (installBlocks[1] as ShellBlock).script], project, asAUser());
  for (const entry of [
    'tool-ledger/dist/index.js',
    'tool-ledger/dist/tool.d.ts',
    '@tool-ledger/client/dist/index.js',
  ]) {
    await readFile(path.join(project, 'node_modules', entry));
  }
  check(true, 'both packages installed from the tarballs, with their built entries');
  // The tools page's module, for its local run on each Node.
  await writeFile(
    path.join(project, 'tools', 'index.ts'),
    await readFile(path.join(ROOT, 'examples', 'tools', 'index.ts'), 'utf8'),
  );

  step('token-only client install: no aws-cdk-lib, no AWS SDK, no agent framework');
  const tokenOnly = path.join(scratch, 'token-only');
  await mkdir(tokenOnly);
  await writeFile(
    path.join(tokenOnly, 'package.json'),
    JSON.stringify({ name: 'token-only', private: true, type: 'module', dependencies: {} }),
  );
  await run('npm', [...INSTALL, path.join(scratch, clientTgz as string)], tokenOnly);
  const tree = await run('npm', ['ls', '--omit=dev', '--all', '--parseable'], tokenOnly);
  check(!/aws-cdk-lib/.test(tree), 'the client depends on no aws-cdk-lib');
  check(!/@aws-sdk|@smithy/.test(tree), 'a token-only client install has no AWS SDK');
  check(
    !/@aws[\\/]durable-execution-sdk-js/.test(tree),
    'a token-only client install has no AWS durable execution SDK (an optional peer of /durable)',
  );
  check(
    !/@openai[\\/]agents|@langchain[\\/]/.test(tree),
    'a token-only client install has no OpenAI Agents SDK and no LangChain (optional peers of their entries)',
  );
  check(
    !/[\\/]node_modules[\\/](ai|@mastra[\\/]core)$/m.test(tree),
    'a token-only client install has no agent framework (ai, @mastra/core: optional peers of /ai-sdk, /mastra)',
  );
  await writeFile(
    path.join(tokenOnly, 'use.mjs'),
    "import { operationIdFor } from '@tool-ledger/client';\nconsole.log(operationIdFor({ agentRunId: 'r', step: 1, callIndex: 0 }), process.version);\n",
  );
  // What users read (declarations, README, source maps) must not point at the internal design brief.
  const clientPointers = await internalPointers(
    path.join(tokenOnly, 'node_modules', '@tool-ledger', 'client'),
  );
  check(
    clientPointers.length === 0,
    `the client package cites no file outside it (${clientPointers.join(', ') || 'none'})`,
  );

  step('consumer project: install the tarballs with the SDKs, CDK and TypeScript');
  const consumer = path.join(scratch, 'consumer');
  await mkdir(path.join(consumer, 'tools'), { recursive: true });
  const versions = (names: string[]) => Object.fromEntries(names.map((n) => [n, pinned[n] as string]));
  await writeFile(
    path.join(consumer, 'package.json'),
    JSON.stringify(
      {
        name: 'consumer',
        private: true,
        type: 'module',
        dependencies: {
          'tool-ledger': `file:../${ledgerTgz}`,
          '@tool-ledger/client': `file:../${clientTgz}`,
          ...versions(['aws-cdk-lib', 'constructs', 'zod', '@aws-sdk/credential-provider-node']),
          ...versions(['@smithy/signature-v4', '@smithy/hash-node', '@modelcontextprotocol/sdk']),
          ...versions(['@aws/durable-execution-sdk-js', 'ai', '@mastra/core']),
          ...versions(['@openai/agents', '@langchain/core', '@langchain/langgraph']),
        },
        devDependencies: versions(['typescript', '@types/node', 'openai', '@anthropic-ai/sdk', 'tsx']),
      },
      null,
      2,
    ),
  );
  await writeFile(path.join(consumer, 'tools', 'index.ts'), TOOLS_MODULE);
  // The docs' tools examples, typed against the packed packages like the consumer's own code.
  for (const [example, file] of Object.entries(DOCS_TOOLS_EXAMPLES)) {
    await writeFile(
      path.join(consumer, file),
      await readFile(path.join(ROOT, 'examples', 'tools', example), 'utf8'),
    );
  }
  await writeFile(path.join(consumer, 'agent.ts'), AGENT_MODULE);
  await writeFile(path.join(consumer, 'run-agent.ts'), RUN_AGENT_MODULE);
  await writeFile(path.join(consumer, 'app.ts'), APP_MODULE);
  for (const example of DOC_EXAMPLES) {
    await writeFile(
      path.join(consumer, path.basename(example)),
      await readFile(path.join(ROOT, example), 'utf8'),
    );
  }
  await writeFile(path.join(consumer, 'load-durable.mjs'), LOAD_DURABLE_MODULE);
  await writeFile(path.join(consumer, 'load-frameworks.mjs'), LOAD_FRAMEWORKS_MODULE);
  await writeFile(path.join(consumer, 'frameworks.ts'), FRAMEWORKS_MODULE);
  await writeFile(path.join(consumer, 'run-frameworks.ts'), RUN_FRAMEWORKS_MODULE);
  await writeFile(path.join(consumer, 'run-ai-sdk.ts'), RUN_AI_SDK_MODULE);
  await writeFile(path.join(consumer, 'tsconfig.nodenext.json'), JSON.stringify(TSCONFIG_NODENEXT, null, 2));
  await writeFile(path.join(consumer, 'tsconfig.bundler.json'), JSON.stringify(TSCONFIG_BUNDLER, null, 2));
  await run('npm', INSTALL, consumer);
  check(true, 'installed');
  // The repository's own Node (a private workspace's optional dependency) must not ride along.
  check(
    !(await readdir(path.join(consumer, 'node_modules'))).some((name) =>
      /^node-(linux|darwin|win)-/.test(name),
    ),
    'installing the packages installs no Node binary',
  );
  // The construct's package ships its handlers, CLI and docs as source: the same rule as the client's.
  const ledgerPointers = await internalPointers(path.join(consumer, 'node_modules', 'tool-ledger'));
  check(
    ledgerPointers.length === 0,
    `the tool-ledger package cites no file outside it (${ledgerPointers.join(', ') || 'none'})`,
  );

  // A CommonJS project (what npm init writes), sharing the consumer's installs through a link: the
  // package.json is what differs.
  const cjs = path.join(scratch, 'consumer-cjs');
  await mkdir(path.join(cjs, 'tools'), { recursive: true });
  await writeFile(
    path.join(cjs, 'package.json'),
    JSON.stringify({ name: 'consumer-cjs', version: '1.0.0', type: 'commonjs', private: true }, null, 2),
  );
  await symlink(path.join(consumer, 'node_modules'), path.join(cjs, 'node_modules'), 'dir');
  await writeFile(path.join(cjs, 'tools', 'index.ts'), TOOLS_MODULE);
  await writeFile(path.join(cjs, 'tools', 'index.mts'), TOOLS_MODULE);
  await writeFile(path.join(cjs, 'tsconfig.json'), JSON.stringify(TSCONFIG_CJS_MTS, null, 2));
  return { scratch, project, tokenOnly, consumer, cjs };
}

/**
 * Every consumer check on one Node: the scratch projects' processes (`node`, `npx tsc`, `npx tsx`,
 * `npx tool-ledger start`) find that Node first on PATH, and the ones that run the packages report the
 * Node they ran on.
 */
async function runConsumers(consumers: Consumers, node: ConsumerNode): Promise<void> {
  const { scratch, project, tokenOnly, consumer, cjs } = consumers;
  const env = pathFirst(node, withoutRepositoryNpmConfig());
  const label = `[node ${node.version}]`;
  const on = (what: string) => `${what} (ran on Node ${node.version})`;
  const ranOn = (version: string | undefined) => version === node.version;

  step(`${label} the tools page's local run, as written, in the project next to the clone`);
  const [startTools, callTool] = await packCheckBlocks(ROOT, 'docs/tools.md');
  const ticketsData = path.join(scratch, `data-tickets-${node.version}`);
  const tickets = await startBlock(startTools as ShellBlock, project, {
    ...pathFirst(node, asAUser()),
    [SETTINGS.dataDir.name]: ticketsData,
    [SETTINGS.logFormat.name]: 'json',
  });
  local = tickets.child;
  const docsCall = curlCall((callTool as ShellBlock).script);
  check(
    JSON.stringify(curlCall(tickets.banner)) === JSON.stringify(docsCall),
    `the banner proposes the tools page's call, key for key (${JSON.stringify(docsCall)})`,
  );
  const answers: string[] = [];
  for (let i = 0; i < 2; i += 1) {
    const script = (callTool as ShellBlock).script.replaceAll('http://127.0.0.1:3000', tickets.api);
    // The same shell as the start: `npx tool-ledger token` reads the data folder local mode was given.
    answers.push(
      await run('bash', ['-e', '-c', script], project, {
        ...pathFirst(node, asAUser()),
        [SETTINGS.dataDir.name]: ticketsData,
      }),
    );
  }
  check(
    /HTTP\/1.1 201/.test(answers[0] ?? '') && /"replayed":false/.test(answers[0] ?? ''),
    'the first call ran tickets.open (201, replayed: false)',
  );
  check(
    /Idempotent-Replayed: true/i.test(answers[1] ?? ''),
    'the second is the stored replay (Idempotent-Replayed: true)',
  );
  const ticketLog = await readFile(path.join(ticketsData, 'workspace', 'tickets.log'), 'utf8');
  check(ticketLog.trim().split('\n').length === 1, 'tickets.log has one line for two calls');
  stopGroup(local);
  local = undefined;

  step(`${label} the token-only client`);
  const [id, clientNode] = (await run('node', ['use.mjs'], tokenOnly, env)).trim().split(' ');
  check(id === 'r:s1:c0' && ranOn(clientNode), on('the client imports and runs with only Node'));

  step(`${label} type-check the consumer (strict, no casts)`);
  await run('npx', ['tsc', '-p', 'tsconfig.nodenext.json'], consumer, env);
  check(
    true,
    "moduleResolution NodeNext: client, three adapters with SDK types, custom tools (the tools examples of docs/tools.md too), construct, the docs' agent examples (durable function and its stack, AI SDK, Mastra, OpenAI Agents, LangChain), the frameworks' runs",
  );
  await run('npx', ['tsc', '-p', 'tsconfig.bundler.json'], consumer, env);
  check(true, 'moduleResolution bundler: the same files');

  step(`${label} the durable entry loads with the durable execution SDK`);
  const durable = JSON.parse(lastLine(await run('node', ['load-durable.mjs'], consumer, env))) as {
    node: string;
    exports: string[];
  };
  check(
    ranOn(durable.node) &&
      ['LedgerStepError', 'durableOperationId', 'withLedger'].every((name) => durable.exports.includes(name)),
    on(`@tool-ledger/client/durable exports ${durable.exports.join(', ')}`),
  );

  step(`${label} the framework entries load with their frameworks`);
  const frameworks = JSON.parse(lastLine(await run('node', ['load-frameworks.mjs'], consumer, env))) as {
    node: string;
    exports: Record<string, string[]>;
  };
  for (const [entry, names] of Object.entries(FRAMEWORK_ENTRIES)) {
    const exported = frameworks.exports[entry] ?? [];
    check(
      ranOn(frameworks.node) && names.every((name) => exported.includes(name)),
      on(`${entry} exports ${exported.join(', ')}`),
    );
  }

  step(`${label} synthesize a stack with the consumer's own tool (real esbuild bundling)`);
  await rm(path.join(consumer, 'cdk.out'), { recursive: true, force: true });
  const synth = JSON.parse(
    lastLine(await run('npx', ['tsx', 'app.ts'], consumer, { ...env, CDK_DISABLE_VERSION_CHECK: '1' })),
  ) as { tools: string[]; node: string };
  check(
    synth.tools.includes('consumer.note') && synth.tools.includes('webhook.post') && ranOn(synth.node),
    on("the manifest lists the consumer's tool and the shipped webhook.post it composes"),
  );
  const template = JSON.parse(
    await readFile(path.join(consumer, 'cdk.out', 'ConsumerLedger.template.json'), 'utf8'),
  );
  const functions = Object.values(
    template.Resources as Record<string, { Type: string; Properties: { Runtime?: string } }>,
  ).filter((r) => r.Type === 'AWS::Lambda::Function');
  check(
    functions.length >= 3 && functions.every((f) => f.Properties.Runtime === 'nodejs24.x'),
    `the template has the handler functions on nodejs24.x (${functions.length} Lambda functions)`,
  );
  const assets = await readdir(path.join(consumer, 'cdk.out'));
  let bundled = 0;
  for (const dir of assets.filter((a) => a.startsWith('asset.'))) {
    const index = await readFile(path.join(consumer, 'cdk.out', dir, 'index.mjs'), 'utf8').catch(() => '');
    if (index.includes('marker 5d1e77')) bundled += 1;
  }
  check(bundled >= 3, `the consumer's tool is bundled into every handler (${bundled} bundles)`);

  step(`${label} run the client against local mode started with the consumer's tool`);
  const dataDir = path.join(scratch, `data-${node.version}`);
  const started = await startLocalMode(consumer, dataDir, env);
  local = started.child;
  // The consumer's CLI prints the token local mode made for the data folder; the agent reads $TOKEN.
  const token = (
    await run('npx', ['tool-ledger', 'token'], consumer, { ...env, [SETTINGS.dataDir.name]: dataDir })
  ).trim();
  check(
    /^tl_[A-Za-z0-9_-]{43}$/.test(token),
    on('local mode made a token for its data folder; the CLI prints it'),
  );
  const seen = JSON.parse(
    (await run('npx', ['tsx', 'run-agent.ts', started.api], consumer, { ...env, TOKEN: token })).trim(),
  ) as {
    node: string;
    first: { state: string; replayed: boolean; result?: { node?: string } };
    second: { state: string; replayed: boolean };
  };
  check(
    seen.first.state === 'succeeded' && !seen.first.replayed && ranOn(seen.first.result?.node),
    on('the first call ran the consumer tool in local mode'),
  );
  check(
    seen.second.state === 'succeeded' && seen.second.replayed && ranOn(seen.node),
    on('the retry is a replay, seen by the agent'),
  );
  const notes = await readFile(path.join(dataDir, 'workspace', 'consumer-notes.log'), 'utf8').catch(
    async () => {
      const tenants = await readdir(path.join(dataDir, 'workspace'));
      return readFile(path.join(dataDir, 'workspace', tenants[0] as string, 'consumer-notes.log'), 'utf8');
    },
  );
  check(notes.trim().split('\n').length === 1, 'one effect for two calls');
  const runs = JSON.parse(
    lastJsonLine(
      await run('npx', ['tsx', 'run-frameworks.ts', started.api], consumer, { ...env, TOKEN: token }),
    ),
  ) as {
    node: string;
    agents: { effects: number; outputs: unknown[] };
    langgraph: { effects: number; outputs: unknown[] };
  };
  const replayed = (output: unknown) =>
    typeof output === 'string' && (JSON.parse(output) as { replayed?: unknown }).replayed === true;
  check(
    ranOn(runs.node) &&
      runs.agents.effects === 1 &&
      runs.agents.outputs[0] === 'refunded 5' &&
      replayed(runs.agents.outputs[1]),
    on('an OpenAI Agents step run twice (new call IDs) refunds once; the second run is told it was a replay'),
  );
  check(
    runs.langgraph.effects === 1 &&
      runs.langgraph.outputs[0] === 'refunded 5' &&
      replayed(runs.langgraph.outputs[1]),
    on(
      'a LangGraph step forked before the model (new call IDs) refunds once; the fork is told it was a replay',
    ),
  );
  const agent = JSON.parse(
    lastJsonLine(await run('npx', ['tsx', 'run-ai-sdk.ts', started.api], consumer, { ...env, TOKEN: token })),
  ) as { node: string; effects: number; first: unknown; replayed: boolean; operationId?: string };
  check(
    ranOn(agent.node) &&
      agent.effects === 1 &&
      JSON.stringify(agent.first) === JSON.stringify({ notified: 'ana', effect: 1 }) &&
      agent.replayed &&
      agent.operationId === 'pack-check-ai-sdk/0/notify/0',
    on('an AI SDK agent on the packed /ai-sdk entry, its step run twice: one effect, the second a replay'),
  );
  stopGroup(local);
  local = undefined;

  step(
    `${label} a CommonJS project (what npm init writes): .ts tools refused with what to change, .mts tools run`,
  );
  const refused = await exitOf('npx', ['tool-ledger', 'start'], cjs, {
    ...env,
    PORT: '0',
    [SETTINGS.dataDir.name]: path.join(scratch, `data-cjs-refused-${node.version}`),
    [SETTINGS.toolsModule.name]: 'tools/index.ts',
  });
  check(
    refused.code === 2 &&
      refused.out.includes('set "type": "module" in your package.json, or name the file index.mts'),
    `a .ts tools module in a CommonJS package stops the start (exit ${refused.code}) and says what to change`,
  );
  await run('npx', ['tsc', '-p', 'tsconfig.json'], cjs, env);
  check(true, 'the .mts tools module type-checks under NodeNext in the CommonJS package');
  const cjsData = path.join(scratch, `data-cjs-${node.version}`);
  const startedCjs = await startLocalMode(cjs, cjsData, env, 'tools/index.mts');
  local = startedCjs.child;
  const cjsToken = (await readFile(path.join(cjsData, 'tokens'), 'utf8')).split('=')[0] as string;
  const twice = [];
  for (let i = 0; i < 2; i += 1) {
    const response = await fetch(`${startedCjs.api}/v1/operations`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${cjsToken}`,
        'idempotency-key': 'cjs-1',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ tool: 'consumer.note', arguments: { note: 'from a CommonJS project' } }),
    });
    twice.push({
      status: response.status,
      body: (await response.json()) as { state?: string; replayed?: boolean; result?: { node?: string } },
    });
  }
  check(
    twice[0]?.status === 201 &&
      twice[0].body.state === 'succeeded' &&
      ranOn(twice[0].body.result?.node) &&
      twice[1]?.body.replayed === true,
    on('local mode runs the .mts tools module of a CommonJS project; the retry is a replay'),
  );
  stopGroup(local);
  local = undefined;
}

/** Kills a local mode started by {@link startLocalMode}, its whole process group (npx, tsx, node). */
function stopGroup(child: ChildProcess | undefined): void {
  if (child?.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

await main();
