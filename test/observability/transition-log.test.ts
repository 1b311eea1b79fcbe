import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  logTransition,
  TRANSITION_LOG_FIELDS,
  type TransitionLogLine,
} from '../../functions/observability/transition-log';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('transition log line', () => {
  it('printed by Powertools with every SPEC §9 field, nulls included', () => {
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const line: TransitionLogLine = {
      event_time: new Date().toISOString(),
      tenant: 'acme',
      agent_run_id: null,
      operation_id: 'op-1',
      tool_name: 'webhook.post',
      arguments_digest: `v1:${'a'.repeat(64)}`,
      attempt_number: 1,
      state_before: null,
      state_after: 'pending',
      replayed: false,
      target_class: 'http',
      outcome_code: null,
      duration_ms: 3,
      request_id: 'req-1',
    };
    logTransition(line);
    const printed = written
      .map((w) => JSON.parse(w) as Record<string, unknown>)
      .find((l) => l.operation_id === 'op-1');
    expect(printed).toBeDefined();
    for (const field of TRANSITION_LOG_FIELDS) expect(printed).toHaveProperty(field);
    expect(printed).toMatchObject({
      state_before: null,
      agent_run_id: null,
      outcome_code: null,
      level: 'INFO',
    });
  });
});
