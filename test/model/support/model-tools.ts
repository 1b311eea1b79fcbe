import { z } from 'zod';
import {
  type AnyTool,
  defineTool,
  NotAppliedError,
  TerminalToolError,
  type ToolContext,
  UncertainOutcomeError,
} from '../../../functions/domain/tool';
import type { ScriptedBehaviour } from './schedule';

/** One effect a scripted tool applied. */
export interface ScriptedEffect {
  /** `tenant#operationId`. */
  key: string;
  variant: number;
  attempt: number;
}

/** Arguments of every scripted tool: who the call belongs to, which variant, and a canary. */
export const scriptedArguments = z
  .object({ tenant: z.string(), variant: z.number().int(), canary: z.string() })
  .strict();

type ScriptedArgs = z.output<typeof scriptedArguments>;

/** Hard deadline of a scripted attempt: a hang costs this much real time. */
export const SCRIPTED_TIMEOUT_MS = 30;

/** Rejects with the signal's reason when it aborts; never settles otherwise. */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/**
 * The scripted tools of the model: real, countable effects (an in-memory log keyed by tenant and
 * operation ID) whose behaviour per attempt comes from the schedule, so the same schedule behaves the
 * same whatever the interleaving. Their `reconcile` answers from the effect log, like a target that
 * can be asked.
 */
export class ScriptedTools {
  readonly effects: ScriptedEffect[] = [];
  /** Calls whose arguments belong to another tenant than the context's (must stay empty). */
  readonly crossTenant: string[] = [];

  constructor(private readonly plan: (key: string, attempt: number) => ScriptedBehaviour) {}

  /** Effects applied for a key, by arguments variant. */
  appliedOf(key: string): [number, number] {
    const counts: [number, number] = [0, 0];
    for (const effect of this.effects) if (effect.key === key) counts[effect.variant === 1 ? 1 : 0] += 1;
    return counts;
  }

  /** The four scripted tools, by the kind names of the schedule. */
  build(): Record<'scripted.effect' | 'scripted.unsure' | 'scripted.plain' | 'scripted.guarded', AnyTool> {
    const truthful = async (args: ScriptedArgs, ctx: ToolContext) => {
      const [v0, v1] = this.appliedOf(`${ctx.tenant}#${ctx.operationId}`);
      return v0 + v1 > 0
        ? { status: 'applied' as const, result: { ok: true, echo: `${args.canary}-res`, reconciled: true } }
        : { status: 'not_applied' as const };
    };
    const base = {
      description: 'a scripted effect of the model-based test',
      effect: 'write' as const,
      targetClass: 'model',
      schema: scriptedArguments,
      timeoutMs: SCRIPTED_TIMEOUT_MS,
      execute: (args: ScriptedArgs, ctx: ToolContext) => this.execute(args, ctx),
    };
    return {
      'scripted.effect': defineTool({ ...base, name: 'model.effect', reconcile: truthful }),
      'scripted.unsure': defineTool({
        ...base,
        name: 'model.unsure',
        maxAttempts: 2,
        reconcile: async () => ({ status: 'unknown' as const }),
      }),
      'scripted.plain': defineTool({ ...base, name: 'model.plain' }),
      'scripted.guarded': defineTool({
        ...base,
        name: 'model.guarded',
        requiresApproval: true,
        reconcile: truthful,
      }),
    };
  }

  private async execute(args: ScriptedArgs, ctx: ToolContext): Promise<unknown> {
    const key = `${ctx.tenant}#${ctx.operationId}`;
    if (args.tenant !== ctx.tenant) this.crossTenant.push(key);
    const apply = () => this.effects.push({ key, variant: args.variant, attempt: ctx.attempt });
    switch (this.plan(key, ctx.attempt)) {
      case 'ok':
        apply();
        return { ok: true, echo: `${args.canary}-res`, attempt: ctx.attempt };
      case 'terminal':
        throw new TerminalToolError('model_refused', 'the target refused the call');
      case 'not_applied':
        throw new NotAppliedError('model_not_sent', 'nothing was sent');
      case 'uncertain_applied':
        apply();
        throw new UncertainOutcomeError('model_response_lost', 'the response was lost');
      case 'uncertain_not_applied':
        throw new UncertainOutcomeError('model_response_lost', 'the response was lost');
      case 'throw_applied':
        apply();
        // A careless tool: its message carries the arguments. The engine must never store or log it.
        throw new Error(`target failed for ${JSON.stringify(args)}`);
      case 'hang':
        return untilAborted(ctx.signal);
      case 'apply_then_hang':
        apply();
        return untilAborted(ctx.signal);
    }
  }
}

/**
 * Wraps a tool so that every `execute` in flight is known (the model waits for them before it moves
 * the clock: an expired lease must mean the holder's attempt is over, as SPEC §1 assumes) and, where
 * given, every successful return is reported (the effect count of tools whose effect cannot be seen
 * twice in the world, like a whole-file write).
 */
export function tracked(
  tool: AnyTool,
  inflight: Set<Promise<unknown>>,
  onReturn?: (args: unknown, ctx: ToolContext, result: unknown) => void,
): AnyTool {
  return {
    ...tool,
    execute(args: unknown, ctx: ToolContext) {
      const running = tool.execute(args, ctx).then((result) => {
        onReturn?.(args, ctx, result);
        return result;
      });
      inflight.add(running);
      running.then(
        () => inflight.delete(running),
        () => inflight.delete(running),
      );
      return running;
    },
  };
}
