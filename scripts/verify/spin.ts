import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { STATES } from '../../functions/domain/states';
import { CALLER_WATCHED } from './caller-checks';
import type { Check } from './checks';

const run = promisify(execFile);

/** The folder of the Promela sources. */
export const MODEL_DIR = path.join(import.meta.dirname, '..', '..', 'model');

/** What one SPIN run found. */
export interface CheckResult {
  check: Check;
  states: number;
  transitions: number;
  depth: number;
  errors: number;
  seconds: number;
  /** For a refuted check: the counterexample, as the events that matter. */
  trail?: string[];
  /** The check ended as expected. */
  ok: boolean;
}

/** Raised when SPIN or the C compiler is missing, with what to install. */
export class SpinMissingError extends Error {
  constructor(tool: string) {
    super(`${tool} is not installed: run \`apt-get install -y spin gcc\` (as root) before npm run verify`);
    this.name = 'SpinMissingError';
  }
}

/** Throws {@link SpinMissingError} unless `spin` and `gcc` can be run. */
export async function assertSpinInstalled(): Promise<void> {
  for (const [tool, args] of [
    ['spin', ['-V']],
    ['gcc', ['--version']],
  ] as const) {
    try {
      await run(tool, [...args]);
    } catch {
      throw new SpinMissingError(tool);
    }
  }
}

/** Verifiers already compiled in this process, by their switches: checks of one cast share one. */
const compiled = new Map<string, Promise<string>>();

async function verifier(defines: readonly string[], liveness: boolean, model: string): Promise<string> {
  const key = [model, ...defines, liveness ? 'fair' : ''].join(' ');
  let dir = compiled.get(key);
  if (!dir) {
    dir = (async () => {
      const folder = await mkdtemp(path.join(tmpdir(), 'tool-ledger-spin-'));
      for (const file of ['ledger.pml', 'caller.pml', 'transitions.pml']) {
        await copyFile(path.join(MODEL_DIR, file), path.join(folder, file));
      }
      await run('spin', ['-a', ...defines, model], { cwd: folder });
      // A safety property ([] p) needs no cycle search: -DSAFETY drops it (a fifth less time); the
      // claim reaching its end is still the violation.
      const cflags = ['-O2', '-DVECTORSZ=2048', '-DCOLLAPSE', ...(liveness ? ['-DNFAIR=3'] : ['-DSAFETY'])];
      await run('gcc', [...cflags, '-o', 'pan', 'pan.c'], { cwd: folder });
      return folder;
    })();
    compiled.set(key, dir);
  }
  return dir;
}

/** Removes the compiled verifiers of this process. */
export async function cleanVerifiers(): Promise<void> {
  const dirs = await Promise.allSettled([...compiled.values()]);
  compiled.clear();
  for (const d of dirs) if (d.status === 'fulfilled') await rm(d.value, { recursive: true, force: true });
}

/**
 * Generates the verifier for one check (`spin -a`), compiles it (once per set of switches), runs it
 * and, for a refuted check, replays the trail (`spin -t -p -g`).
 */
export async function runCheck(check: Check): Promise<CheckResult> {
  // A proof also checks the model's own assertions (every write allowed by the table); a broken
  // variant leaves them out, so that the property itself is what SPIN refutes.
  const defines = [...check.defines, ...(check.expect === 'refuted' ? ['NO_TABLE_ASSERTS'] : [])].map(
    (d) => `-D${d}`,
  );
  const started = Date.now();
  const model = check.model ?? 'ledger.pml';
  const dir = await verifier(defines, check.liveness === true, model);
  const panArgs = ['-m200000', ...(check.liveness ? ['-a', '-f'] : []), '-N', check.property];
  const out = await run('./pan', panArgs, { cwd: dir, maxBuffer: 64 * 1024 * 1024 }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
  );
  const seconds = (Date.now() - started) / 1000;
  const text = out.stdout;
  const result: CheckResult = {
    check,
    states: number(text, /([\d.e+]+) states, stored/),
    transitions: number(text, /([\d.e+]+) transitions \(= stored\+matched\)/),
    depth: number(text, /depth reached (\d+)/),
    errors: number(text, /errors: (\d+)/, -1),
    seconds,
    ok: false,
  };
  if (/error: max search depth too small/.test(text)) result.errors = -1;
  if (result.errors > 0) {
    const replay = await run('spin', ['-t', '-p', '-g', ...defines, model], {
      cwd: dir,
      maxBuffer: 64 * 1024 * 1024,
    });
    result.trail = shortenTrail(replay.stdout);
  }
  // A broken variant counts only when its counterexample shows what the variant claims.
  result.ok =
    check.expect === 'holds'
      ? result.errors === 0
      : result.errors > 0 && (check.shows === undefined || check.shows.test((result.trail ?? []).join('\n')));
  return result;
}

function number(text: string, pattern: RegExp, missing = 0): number {
  const match = pattern.exec(text);
  return match?.[1] === undefined ? missing : Number(match[1]);
}

/** The global variables whose changes tell the story of a counterexample, and how to say them. */
const WATCHED: Record<string, (value: string) => string> = {
  st: (v) => `record -> ${stateName(Number(v))}`,
  att: (v) => `attempt = ${v}`,
  resv: (v) => `reservation ${v} created`,
  leaseExp: (v) => (v === '1' ? 'lease expired' : 'new lease'),
  apprExp: (v) => (v === '1' ? 'approval deadline passed' : ''),
  expd: (v) => (v === '1' ? 'retention passed: the key is free again' : ''),
  crashes: () => 'worker crashed',
  lost: () => 'commit response lost',
  lostClaim: () => 'claim request or response lost',
  'applied[1]': (v) => `EFFECT of reservation 1 (count ${v})`,
  'applied[2]': (v) => `EFFECT of reservation 2 (count ${v})`,
  'apprOf[1]': (v) => `approval of digest ${v} recorded`,
  'apprOf[2]': (v) => `approval of digest ${v} recorded`,
  effNoAppr: (v) => (v === '1' ? 'an effect ran without an approval of its digest' : ''),
  effWrongDig: (v) => (v === '1' ? "an effect ran with another caller's arguments" : ''),
  termChanged: (v) => (v === '1' ? 'a write changed a terminal record' : ''),
  toolEff: (v) => (v === '2' ? 'the tool is redeployed as a read' : ''),
  maybe: (v) => (v === '1' ? "retried on the target's dedupe: the effect may have happened" : ''),
  exhaustHid: (v) => (v === '1' ? 'attempts ran out into failed_terminal after an effect' : ''),
  effAfterTerminal: (v) => (v === '1' ? 'an effect ran after its record was terminal' : ''),
  outAtt: (v) => (v === '0' ? '' : `outcome of attempt ${v} stored`),
  ...CALLER_WATCHED,
};

function stateName(code: number): string {
  return code === 0 ? '(none)' : (STATES[code - 1] ?? `state ${code}`);
}

/**
 * Shortens a `spin -t -p -g` replay to the steps that changed a watched variable: who did it and
 * what changed, plus the start of an acceptance cycle. Typically 10-30 lines instead of thousands.
 */
export function shortenTrail(replay: string): string[] {
  const events: string[] = [];
  const last = new Map<string, string>();
  let actor = '';
  for (const line of replay.split('\n')) {
    const step = /^\s*(\d+):\s+proc\s+(\d+) \((\w+)(?::\d+)?\)/.exec(line);
    if (step) {
      actor = `proc ${step[2]} ${step[3]}`;
      continue;
    }
    if (line.includes('START OF CYCLE')) {
      events.push('--- from here the run repeats forever ---');
      continue;
    }
    const global = /^\t\t([\w[\]]+) = (\S+)$/.exec(line);
    if (!global) continue;
    const [, name, value] = global as unknown as [string, string, string];
    if ((last.get(name) ?? '0') === value) continue;
    last.set(name, value);
    const say = WATCHED[name]?.(value);
    if (say) {
      const event = `${actor}: ${say}`;
      if (events[events.length - 1] !== event) events.push(event);
    }
  }
  return events;
}
