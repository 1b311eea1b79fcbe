import { UnknownToolError } from '../domain/errors';
import { type AnyTool, TOOL_NAME_PATTERN } from '../domain/tool';

/** What the shipped tools need from their deployment. */
export interface ToolEnvironment {
  /** Root folder of the workspace tools. */
  workspaceRoot: string;
  /** Origins `webhook.post` may call (`scheme://host[:port]`). */
  webhookAllow: readonly string[];
  /** Origins whose servers dedupe on `Idempotency-Key` (enables reconcile-by-retry). */
  webhookIdempotentOrigins?: readonly string[];
  /** Local mode: plain http and port-less loopback entries are allowed. */
  local: boolean;
  /**
   * The deployment's own service endpoints (`[scheme://]host:port`): the local DynamoDB, SQS and API
   * in local mode, the Lambda runtime API on AWS. Tools never reach them, whatever the allow list says.
   */
  reservedEndpoints?: readonly string[];
  /**
   * How long terminal records are kept by default, seconds: per-operation state a tool keeps (the
   * append markers) may be swept once it is older than that. @default 2592000 (30 days)
   */
  retentionSeconds?: number;
  /**
   * A secret the deployment gives its tools (the construct's `toolSecrets`: a Secrets Manager secret or
   * an SSM SecureString, read when asked and cached for a few minutes; in local mode, an environment
   * variable of the same name). Call it when the tool runs (in `execute` or `reconcile`), never in the
   * factory: the construct loads the factory at synth, where no secret is readable.
   */
  secret?(name: string): Promise<string>;
}

/** A module that contributes tools: what infrastructure teams point the construct at. */
export type ToolFactory = (env: ToolEnvironment) => readonly AnyTool[];

/** A tool as published at `GET /v1/tools`. */
export interface ToolDescription {
  name: string;
  description: string;
  effect: 'write' | 'read';
  requires_approval: boolean;
  timeout_ms: number;
  max_attempts: number;
  input_schema: unknown;
}

/**
 * Why a tool cannot be served as declared, or undefined when it can: the one rule on a tool's policy
 * that no path could keep. A read tool that requires approval would be published as needing an
 * approver and then run at once (reads have no record to hold), so it is refused wherever tools are
 * built: this registry (every handler, local mode's start, exit 2) and the construct at synth. A tool
 * whose reads must wait for a person is a write tool with `requiresApproval`.
 *
 * @example
 * ```ts
 * toolDeclarationProblem({ name: 'acme.export', effect: 'read', requiresApproval: true, ... });
 * // 'tool "acme.export" is a read tool that requires approval: …'
 * ```
 */
export function toolDeclarationProblem(
  tool: Pick<AnyTool, 'name' | 'effect' | 'requiresApproval'>,
): string | undefined {
  if (tool.effect === 'read' && tool.requiresApproval === true) {
    return (
      `tool "${tool.name}" is a read tool that requires approval: reads run at once and are never held ` +
      "for an approver; declare it effect: 'write' (every call then waits for an approval) or drop requiresApproval"
    );
  }
  return undefined;
}

/**
 * The tools of a deployment, by name. Names are checked once here so that the digest never sees an
 * invalid one, and so is each tool's declaration ({@link toolDeclarationProblem}).
 *
 * @example
 * ```ts
 * const registry = new ToolRegistry(builtinTools(env));
 * registry.get('webhook.post');
 * ```
 */
export class ToolRegistry {
  private readonly tools = new Map<string, AnyTool>();

  constructor(tools: readonly AnyTool[]) {
    for (const tool of tools) {
      if (!TOOL_NAME_PATTERN.test(tool.name))
        throw new Error(`invalid tool name ${JSON.stringify(tool.name)}`);
      if (this.tools.has(tool.name)) throw new Error(`tool ${tool.name} is registered twice`);
      const problem = toolDeclarationProblem(tool);
      if (problem !== undefined) throw new Error(problem);
      this.tools.set(tool.name, tool);
    }
  }

  /** The tool of that name, or `tool_unknown`. */
  get(name: unknown): AnyTool {
    const tool = typeof name === 'string' ? this.tools.get(name) : undefined;
    if (!tool) throw new UnknownToolError(typeof name === 'string' ? name : String(name));
    return tool;
  }

  /** The tool of that name, if any. */
  find(name: string): AnyTool | undefined {
    return this.tools.get(name);
  }

  /** Every tool, in registration order. */
  list(): AnyTool[] {
    return [...this.tools.values()];
  }
}
