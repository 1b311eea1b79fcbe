import { describe, expect, it } from 'vitest';
import {
  CallerToolsError,
  callerToolDecision,
  formatCallerTools,
  globMatches,
  parseCallerTools,
} from '../../functions/domain/caller-tools';

/** The deployment's rules for caller tool names (`TOOL_LEDGER_CALLER_TOOLS`, the construct's `callerTools`). */

const WHERE = 'TOOL_LEDGER_CALLER_TOOLS';

function refusal(spec: string): string {
  try {
    parseCallerTools(spec, WHERE);
  } catch (error) {
    expect(error).toBeInstanceOf(CallerToolsError);
    return (error as Error).message;
  }
  throw new Error('the setting was accepted');
}

describe('caller tool rules', () => {
  it('unset or blank restricts nothing and forces nothing', () => {
    expect(parseCallerTools(undefined, WHERE)).toBeUndefined();
    expect(parseCallerTools('  ', WHERE)).toBeUndefined();
    expect(callerToolDecision(undefined, 'acme', 'anything.at_all')).toEqual({
      allowed: true,
      requiresApproval: false,
    });
  });

  it('reads tenants, patterns and options, and writes them back the same', () => {
    const spec = 'crm.*,acme/pay.*:approval:max_attempts=1,*.delete:approval,ops:team/x.y:max_attempts=10';
    const rules = parseCallerTools(spec, WHERE);
    expect(rules).toEqual([
      { pattern: 'crm.*', requiresApproval: false },
      { tenant: 'acme', pattern: 'pay.*', requiresApproval: true, maxAttempts: 1 },
      { pattern: '*.delete', requiresApproval: true },
      { tenant: 'ops:team', pattern: 'x.y', requiresApproval: false, maxAttempts: 10 },
    ]);
    expect(formatCallerTools(rules ?? [])).toBe(spec);
  });

  it('names the entry and what is wrong with it', () => {
    expect(refusal('crm.*,Pay.*')).toBe(
      'TOOL_LEDGER_CALLER_TOOLS entry 2 (Pay.*): the pattern must be a tool name ([a-z][a-z0-9_.-]{0,63}) in which * stands for any characters',
    );
    expect(refusal('crm.*:approve')).toBe(
      'TOOL_LEDGER_CALLER_TOOLS entry 1 (crm.*:approve): unknown option "approve" (options: approval, max_attempts=N)',
    );
    expect(refusal('crm.*:max_attempts=0')).toContain('max_attempts must be 1 to 10');
    expect(refusal('crm.*:max_attempts=11')).toContain('max_attempts must be 1 to 10');
    expect(refusal('crm.*:max_attempts=two')).toContain('max_attempts must be 1 to 10');
    expect(refusal('ac#me/crm.*')).toContain('the tenant must match');
    expect(refusal('crm.*,,x')).toBe('TOOL_LEDGER_CALLER_TOOLS entry 2 (): is empty');
    expect(refusal('/crm.*')).toContain('the tenant must match');
  });

  it('allows a name an entry for every tenant or for this tenant matches, and nothing else', () => {
    const rules = parseCallerTools('crm.*,acme/pay.refund', WHERE);
    expect(callerToolDecision(rules, 'acme', 'crm.create').allowed).toBe(true);
    expect(callerToolDecision(rules, 'other', 'crm.create').allowed).toBe(true);
    expect(callerToolDecision(rules, 'acme', 'pay.refund').allowed).toBe(true);
    expect(callerToolDecision(rules, 'other', 'pay.refund').allowed).toBe(false);
    expect(callerToolDecision(rules, 'acme', 'pay.refund2').allowed).toBe(false);
    expect(callerToolDecision(rules, 'acme', 'hr.fire').allowed).toBe(false);
  });

  it('forces approval if any matching entry does, and caps attempts at the least cap', () => {
    const rules = parseCallerTools('*:max_attempts=5,pay.*:approval,acme/pay.*:max_attempts=2', WHERE);
    expect(callerToolDecision(rules, 'acme', 'pay.refund')).toEqual({
      allowed: true,
      requiresApproval: true,
      maxAttempts: 2,
    });
    expect(callerToolDecision(rules, 'other', 'pay.refund')).toEqual({
      allowed: true,
      requiresApproval: true,
      maxAttempts: 5,
    });
    expect(callerToolDecision(rules, 'other', 'crm.x')).toEqual({
      allowed: true,
      requiresApproval: false,
      maxAttempts: 5,
    });
  });

  it('matches * as any run of name characters, empty included, anywhere in the pattern', () => {
    expect(globMatches('crm.*', 'crm.')).toBe(true);
    expect(globMatches('crm.*', 'crm.a.b')).toBe(true);
    expect(globMatches('crm.*', 'crmx')).toBe(false);
    expect(globMatches('*', 'a')).toBe(true);
    expect(globMatches('*.delete', 'files.delete')).toBe(true);
    expect(globMatches('*.delete', 'files.delete_all')).toBe(false);
    expect(globMatches('a*b*c', 'abc')).toBe(true);
    expect(globMatches('a*b*c', 'axxbyyc')).toBe(true);
    expect(globMatches('a*b*c', 'acb')).toBe(false);
    expect(globMatches('ab*ba', 'aba')).toBe(false);
    expect(globMatches('x.y', 'x.y')).toBe(true);
    expect(globMatches('x.y', 'xzy')).toBe(false);
  });
});
