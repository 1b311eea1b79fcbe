import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { prepareCall } from '../../../functions/engine/prepare-call';
import type { ToolRegistry } from '../../../functions/tools/registry';
import { tenantFolder } from '../../../functions/tools/workspace-path';
import type { HookServer } from './hook-server';
import type { ScriptedTools } from './model-tools';
import type { OpSpec, ToolKind } from './schedule';

/** The two tenants. They share operation IDs and must never see each other's records. */
export const TENANTS = ['tenant-a', 'tenant-b'] as const;

/**
 * Every canary starts with this. Canaries are planted in arguments, paths, headers and results, never
 * in identities (operation IDs, tenants), which logs carry by design.
 */
export const CANARY_PREFIX = 'cnry';

/** One operation of a schedule, with everything needed to submit it and to count its effects. */
export interface ModelOp {
  index: number;
  spec: OpSpec;
  tenant: string;
  operationId: string;
  /** `tenant#operationId`, the effect logs' key. */
  key: string;
  toolName: string;
  /** Two argument variants: 0 is the operation, 1 is a conflicting reuse of its ID. */
  args: [Record<string, unknown>, Record<string, unknown>];
  digests: [string, string];
  canaries: [string, string];
  /** How many times the effect of each variant happened in the world. */
  applied(): Promise<[number, number]>;
  /** The variant a stored digest belongs to, or undefined (a record of someone else's arguments). */
  variantOf(digest: string): 0 | 1 | undefined;
}

/** What the catalogue needs from the world. */
export interface CatalogueParts {
  salt: string;
  registry: ToolRegistry;
  toolNames: Record<ToolKind, string>;
  scripted: ScriptedTools;
  workspaceRoot: string;
  plainHook: HookServer;
  idemHook: HookServer;
  deadOrigin: string;
  /** Successful returns of whole-file tools, by key and variant (see `tracked`). */
  returns: Map<string, [number, number]>;
}

/** Workspace path of the journal all append operations of a tenant write to (in its own root). */
export function journalPath(salt: string): string {
  return `${CANARY_PREFIX}${salt}-journal.txt`;
}

function argumentsOf(
  parts: CatalogueParts,
  spec: OpSpec,
  tenant: string,
  canary: string,
  variant: number,
): Record<string, unknown> {
  const dir = `${tenant}/op-${spec.id}-${CANARY_PREFIX}${parts.salt}d`;
  switch (spec.kind) {
    case 'scripted.effect':
    case 'scripted.unsure':
    case 'scripted.plain':
    case 'scripted.guarded':
      return { tenant, variant, canary };
    case 'workspace.write_file':
      return { path: `${dir}/out.txt`, content: `${canary}\n` };
    case 'workspace.append_line':
      return { path: journalPath(parts.salt), line: canary };
    case 'workspace.delete_file':
      return { path: `${dir}/doomed-${variant}.txt` };
    case 'webhook.plain':
    case 'webhook.idempotent':
    case 'webhook.dead': {
      const origin =
        spec.kind === 'webhook.plain'
          ? parts.plainHook.origin
          : spec.kind === 'webhook.idempotent'
            ? parts.idemHook.origin
            : parts.deadOrigin;
      return {
        url: `${origin}/hook/${canary}`,
        json: { canary, variant, tenant, op: `op-${spec.id}` },
        headers: { 'x-model-canary': canary },
      };
    }
  }
}

async function countLines(file: string, lines: [string, string]): Promise<[number, number]> {
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return [0, 0];
  }
  const counts: [number, number] = [0, 0];
  for (const line of text.split('\n')) {
    if (line === lines[0]) counts[0] += 1;
    if (line === lines[1]) counts[1] += 1;
  }
  return counts;
}

/** Builds the operations of a schedule: arguments, digests and effect counters. */
export function buildCatalogue(parts: CatalogueParts, specs: OpSpec[]): ModelOp[] {
  return specs.map((spec, index) => {
    const tenant = TENANTS[spec.tenant];
    const operationId = `op-${spec.id}`;
    const key = `${tenant}#${operationId}`;
    const canaries: [string, string] = [0, 1].map(
      (v) => `${CANARY_PREFIX}${parts.salt}x${spec.tenant}x${spec.id}v${v}z`,
    ) as [string, string];
    const args = [0, 1].map((v) => argumentsOf(parts, spec, tenant, canaries[v] ?? '', v)) as ModelOp['args'];
    const toolName = parts.toolNames[spec.kind];
    const digests = args.map((a) => prepareCall(parts.registry, operationId, toolName, a).digest) as [
      string,
      string,
    ];
    const applied = async (): Promise<[number, number]> => {
      switch (spec.kind) {
        case 'scripted.effect':
        case 'scripted.unsure':
        case 'scripted.plain':
        case 'scripted.guarded':
          return parts.scripted.appliedOf(key);
        case 'workspace.append_line':
          return countLines(
            path.join(parts.workspaceRoot, tenantFolder(tenant), journalPath(parts.salt)),
            canaries,
          );
        case 'workspace.write_file':
        case 'workspace.delete_file':
          return [...(parts.returns.get(key) ?? [0, 0])] as [number, number];
        case 'webhook.plain':
          return parts.plainHook.appliedOf(key);
        case 'webhook.idempotent':
          return parts.idemHook.appliedOf(key);
        case 'webhook.dead':
          return [0, 0];
      }
    };
    return {
      index,
      spec,
      tenant,
      operationId,
      key,
      toolName,
      args,
      digests,
      canaries,
      applied,
      variantOf: (digest) => (digest === digests[0] ? 0 : digest === digests[1] ? 1 : undefined),
    };
  });
}
