import { canonicalCall } from '../../../functions/domain/digest';
import type { AnyTool, ToolContext } from '../../../functions/domain/tool';
import { builtinTools } from '../../../functions/tools/builtin';
import { ToolRegistry } from '../../../functions/tools/registry';
import type { ModelOp } from './catalogue';
import { ScriptedTools, tracked } from './model-tools';
import type { ToolKind } from './schedule';

/** The tools of one world, and what counts their effects. */
export interface Toolbox {
  registry: ToolRegistry;
  scripted: ScriptedTools;
  /** The registered tool name of each kind. */
  toolNames: Record<ToolKind, string>;
  /** Successful returns of the whole-file tools (write, delete), by key and arguments variant. */
  returns: Map<string, [number, number]>;
}

/** What the toolbox needs from its world. */
export interface ToolboxParts {
  workspaceRoot: string;
  /** The webhook origin listed as downstream-idempotent. */
  idempotentOrigin: string;
  /** Every tool execution in flight goes here (see `tracked`). */
  inflight: Set<Promise<unknown>>;
  /** The world's operations by `tenant#operationId`, filled once the catalogue exists. */
  byKey: Map<string, ModelOp>;
  /** Where surprises are reported. */
  anomalies: string[];
}

/**
 * Assembles a world's tools: the four scripted tools (behaviour per attempt from the schedule) and
 * the shipped tools as `builtinTools` builds them for local mode, on the world's workspace, with
 * loopback webhooks allowed and one origin listed as downstream-idempotent.
 */
export function buildToolbox(parts: ToolboxParts): Toolbox {
  const { byKey, inflight } = parts;
  const scripted = new ScriptedTools((key, attempt) => byKey.get(key)?.spec.attempts[attempt - 1] ?? 'ok');
  const returns = new Map<string, [number, number]>();
  // A write or delete whose effect happened (a delete that found nothing to delete did nothing).
  const countReturn = (args: unknown, ctx: ToolContext, result: unknown) => {
    if ((result as { deleted?: unknown } | null)?.deleted === false) return;
    const key = `${ctx.tenant}#${ctx.operationId}`;
    const op = byKey.get(key);
    const variant = op?.variantOf(canonicalCall(op.toolName, args).digest);
    if (variant === undefined) {
      parts.anomalies.push(`${key}: an effect ran with arguments of no variant`);
      return;
    }
    const counts = returns.get(key) ?? [0, 0];
    counts[variant] += 1;
    returns.set(key, counts);
  };
  const byName = new Map(
    builtinTools({
      workspaceRoot: parts.workspaceRoot,
      webhookAllow: ['http://127.0.0.1'],
      webhookIdempotentOrigins: [parts.idempotentOrigin],
      local: true,
    }).map((tool) => [tool.name, tool]),
  );
  const shipped = (name: string): AnyTool => {
    const tool = byName.get(name);
    if (!tool) throw new Error(`the shipped tools have no ${name}`);
    return tool;
  };
  const own = scripted.build();
  const registry = new ToolRegistry([
    ...Object.values(own).map((tool) => tracked(tool, inflight)),
    tracked(shipped('workspace.write_file'), inflight, countReturn),
    tracked(shipped('workspace.append_line'), inflight),
    tracked(shipped('workspace.delete_file'), inflight, countReturn),
    tracked(shipped('webhook.post'), inflight),
  ]);
  const toolNames: Record<ToolKind, string> = {
    'scripted.effect': own['scripted.effect'].name,
    'scripted.unsure': own['scripted.unsure'].name,
    'scripted.plain': own['scripted.plain'].name,
    'scripted.guarded': own['scripted.guarded'].name,
    'workspace.write_file': 'workspace.write_file',
    'workspace.append_line': 'workspace.append_line',
    'workspace.delete_file': 'workspace.delete_file',
    'webhook.plain': 'webhook.post',
    'webhook.idempotent': 'webhook.post',
    'webhook.dead': 'webhook.post',
  };
  return { registry, scripted, toolNames, returns };
}
