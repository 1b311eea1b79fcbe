import { z } from 'zod';
import { type AnyTool, defineTool } from '../../functions/domain/tool';

/** Arguments of every benchmark call, on both sides: small, like a typical tool call. */
export interface BenchArguments {
  target: string;
  n: number;
}

/** The arguments of call `n`; `variant` changes them without changing the operation ID (conflicts). */
export function benchArguments(n: number, variant = 'bench'): BenchArguments {
  return { target: variant, n };
}

/**
 * A trivial in-memory effect shared by both sides: it counts how many times each operation's effect
 * ran, which is the figure the crash and concurrency scenarios are about.
 */
export class EffectLog {
  private readonly counts = new Map<string, number>();

  /** Applies the effect of an operation; returns how many times it has now run. */
  apply(operationId: string): number {
    const n = (this.counts.get(operationId) ?? 0) + 1;
    this.counts.set(operationId, n);
    return n;
  }

  /** How many times an operation's effect ran. */
  of(operationId: string): number {
    return this.counts.get(operationId) ?? 0;
  }
}

/** `document`: a real payload (a patch, a file, a JSON document) for the capacity bench. */
const schema = z
  .object({ target: z.string(), n: z.number().int(), document: z.unknown().optional() })
  .strict();

/** The write tool of the benchmark: the effect, plus a reconcile that asks the effect log. */
export function benchWriteTool(effects: EffectLog): AnyTool {
  return defineTool({
    name: 'bench.effect',
    description: 'a trivial in-memory effect for the benchmark',
    effect: 'write',
    schema,
    async execute(args, ctx) {
      return { ok: true, n: args.n, effect: effects.apply(ctx.operationId) };
    },
    async reconcile(_args, ctx) {
      return effects.of(ctx.operationId) > 0
        ? { status: 'applied', result: { ok: true, reconciled: true } }
        : { status: 'not_applied' };
    },
  });
}

/** The read tool of the benchmark (`effect: 'read'`): the same work through the read-tool path. */
export function benchReadTool(effects: EffectLog): AnyTool {
  return defineTool({
    name: 'bench.read',
    description: 'a trivial in-memory read for the benchmark',
    effect: 'read',
    schema,
    async execute(args, ctx) {
      return { ok: true, n: args.n, effect: effects.apply(ctx.operationId) };
    },
  });
}
