import { describe, expect, it } from 'vitest';
import {
  type ToolDescription,
  ToolNameMap,
  toAnthropicTools,
  toChatCompletionTools,
  toResponsesTools,
} from '../../client/index';
import fixture from '../fixtures/tool-ledger-tools.json';

const tools = fixture.tools as ToolDescription[];

const writeFileParameters = {
  type: 'object',
  properties: { path: { type: 'string', minLength: 1 }, content: { type: 'string' } },
  required: ['path', 'content'],
  additionalProperties: false,
};
const webhookParameters = {
  type: 'object',
  properties: {
    url: { type: 'string', format: 'uri' },
    json: {},
    headers: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: 'string' } },
  },
  required: ['url', 'json'],
  additionalProperties: false,
};

describe('ToolNameMap', () => {
  it('maps dotted ledger names to model names and back', () => {
    const names = ToolNameMap.fromTools(tools);
    expect(names.toModel('webhook.post')).toBe('webhook_post');
    expect(names.toLedger('webhook_post')).toBe('webhook.post');
    expect(names.toLedger('workspace_write_file')).toBe('workspace.write_file');
    expect(names.toLedger('webhook.post')).toBeUndefined();
    expect(names.toLedger('shell_exec')).toBeUndefined();
  });

  it('refuses two tools that would share a model name, unless one is overridden', () => {
    expect(() => ToolNameMap.fromTools(['a.b', 'a_b'])).toThrow(/a\.b and a_b|a_b and a\.b/);
    const names = ToolNameMap.fromTools(['a.b', 'a_b'], { 'a.b': 'a-b' });
    expect(names.toLedger('a-b')).toBe('a.b');
    expect(names.toLedger('a_b')).toBe('a_b');
  });

  it('refuses an override a model would not accept', () => {
    expect(() => ToolNameMap.fromTools(['a.b'], { 'a.b': 'a.b' })).toThrow(/not \[a-zA-Z0-9_-\]/);
  });
});

describe('tool definitions for models', () => {
  it('gives Chat Completions function tools without $schema', () => {
    expect(toChatCompletionTools(tools)).toEqual([
      {
        type: 'function',
        function: {
          name: 'workspace_write_file',
          description: 'Writes a file under the workspace root.',
          parameters: writeFileParameters,
        },
      },
      {
        type: 'function',
        function: {
          name: 'webhook_post',
          description: 'POSTs JSON to an allowed origin.',
          parameters: webhookParameters,
        },
      },
    ]);
  });

  it('gives Responses API function tools, flat and not strict', () => {
    expect(toResponsesTools(tools)).toEqual([
      {
        type: 'function',
        name: 'workspace_write_file',
        description: 'Writes a file under the workspace root.',
        parameters: writeFileParameters,
        strict: false,
      },
      {
        type: 'function',
        name: 'webhook_post',
        description: 'POSTs JSON to an allowed origin.',
        parameters: webhookParameters,
        strict: false,
      },
    ]);
  });

  it('gives Anthropic tools with input_schema', () => {
    expect(toAnthropicTools(tools, ToolNameMap.fromTools(tools, { 'webhook.post': 'notify' }))).toEqual([
      {
        name: 'workspace_write_file',
        description: 'Writes a file under the workspace root.',
        input_schema: writeFileParameters,
      },
      { name: 'notify', description: 'POSTs JSON to an allowed origin.', input_schema: webhookParameters },
    ]);
  });
});
