import type { ToolDescription } from '../api-types';

/** What model providers accept as a function/tool name (OpenAI and Anthropic alike). */
const MODEL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Two-way mapping between ledger tool names (`webhook.post`) and names a model accepts
 * (`webhook_post`): OpenAI and Anthropic refuse `.` in function names, while tool-ledger names use it
 * for namespaces. Built from the full list of tools so that a collision (`a.b` and `a_b`) fails when
 * the map is made instead of sending a call to the wrong tool.
 *
 * @example
 * ```ts
 * const names = ToolNameMap.fromTools(await client.tools());
 * names.toModel('webhook.post');   // 'webhook_post'
 * names.toLedger('webhook_post');  // 'webhook.post'
 * names.toLedger('rm_rf');         // undefined: not a tool of this deployment
 * ```
 */
export class ToolNameMap {
  private readonly ledgerToModel = new Map<string, string>();
  private readonly modelToLedger = new Map<string, string>();

  private constructor(entries: Iterable<[ledger: string, model: string]>) {
    for (const [ledger, model] of entries) {
      if (!MODEL_NAME.test(model))
        throw new Error(`model name ${JSON.stringify(model)} is not [a-zA-Z0-9_-]{1,64}`);
      const taken = this.modelToLedger.get(model);
      if (taken !== undefined && taken !== ledger) {
        throw new Error(
          `tools ${taken} and ${ledger} both map to ${model}; pass an override for one of them`,
        );
      }
      this.ledgerToModel.set(ledger, model);
      this.modelToLedger.set(model, ledger);
    }
  }

  /**
   * A map for these tools: every character a model refuses becomes `_`, unless `overrides` names
   * the model name of a tool.
   */
  static fromTools(
    tools: Iterable<string | Pick<ToolDescription, 'name'>>,
    overrides: Readonly<Record<string, string>> = {},
  ): ToolNameMap {
    const entries: [string, string][] = [];
    for (const tool of tools) {
      const ledger = typeof tool === 'string' ? tool : tool.name;
      entries.push([ledger, overrides[ledger] ?? ledger.replace(/[^a-zA-Z0-9_-]/g, '_')]);
    }
    return new ToolNameMap(entries);
  }

  /** The name to show the model. Throws for a tool that is not in the map. */
  toModel(ledgerName: string): string {
    const model = this.ledgerToModel.get(ledgerName);
    if (model === undefined) throw new Error(`tool ${ledgerName} is not in the name map`);
    return model;
  }

  /** The ledger tool a model's call names, or `undefined` if the model made the name up. */
  toLedger(modelName: string): string | undefined {
    return this.modelToLedger.get(modelName);
  }
}

/**
 * A tool's JSON Schema as a model's `parameters` / `input_schema`: zod's output minus `$schema`,
 * which providers do not need and some reject.
 *
 * @example
 * ```ts
 * modelParameters({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }); // { type: 'object' }
 * ```
 */
export function modelParameters(schema: unknown): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return { type: 'object', properties: {} };
  }
  const { $schema: _ignored, ...rest } = schema as Record<string, unknown>;
  return rest;
}
