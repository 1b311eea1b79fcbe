import { addTally, type CallTally, emptyTally, type TallySource } from './call-counter';

/** One side of an A/B comparison. */
export interface SideSpec {
  counter: TallySource;
  /** Untimed, uncounted work before iteration `i` (e.g. completing the operation a replay replays). */
  prepare?: (i: number) => Promise<void>;
  /** The measured work of iteration `i`. */
  run: (i: number) => Promise<void>;
}

/** What one side measured. */
export interface SideSamples {
  /** Wall time of each measured iteration, ms. */
  latencies: number[];
  /** Time spent inside DynamoDB requests in each iteration, ms. */
  dynamoMs: number[];
  /** Everything sent during the measured iterations. */
  tally: CallTally;
  /** Measured iterations. */
  iterations: number;
}

/** Options of {@link runAb}. */
export interface AbOptions {
  iterations: number;
  /** Iterations run first and thrown away (JIT, connection pools, caches of the runtime). */
  warmup: number;
  a: SideSpec;
  b: SideSpec;
}

function samples(): SideSamples {
  return { latencies: [], dynamoMs: [], tally: emptyTally(), iterations: 0 };
}

/**
 * Runs two implementations of the same work in alternation, A then B, then B then A, so that a
 * slow moment of the machine (another process, a GC) falls on both sides alike.
 */
export async function runAb(options: AbOptions): Promise<{ a: SideSamples; b: SideSamples }> {
  const out = { a: samples(), b: samples() };
  const total = options.warmup + options.iterations;
  for (let i = 0; i < total; i++) {
    const order: ('a' | 'b')[] = i % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
    for (const side of order) {
      const spec = options[side];
      if (spec.prepare) await spec.prepare(i);
      await spec.counter.take();
      const started = performance.now();
      await spec.run(i);
      const elapsed = performance.now() - started;
      const tally = await spec.counter.take();
      if (i < options.warmup) continue;
      const s = out[side];
      s.latencies.push(elapsed);
      s.dynamoMs.push(tally.dynamoMs);
      s.iterations += 1;
      addTally(s.tally, tally);
    }
  }
  return out;
}
