import { describe, expect, it } from 'vitest';
import { SessionWindow } from '../../cli/mcp-session-window';

/** The bridge's session window on its own, with a clock the test moves. */
describe('the session window of the stdio bridge', () => {
  it('names the same call the same operation until its window ends, then a new one', () => {
    let now = 1_000;
    const window = new SessionWindow(60_000, () => now);
    const a = window.idFor('email.send', { to: 'x@y', body: 'hi' });
    expect(window.idFor('email.send', { body: 'hi', to: 'x@y' })).toBe(a);
    expect(window.idFor('email.send', { to: 'x@y', body: 'other' })).not.toBe(a);
    expect(window.idFor('email.other', { to: 'x@y', body: 'hi' })).not.toBe(a);
    now += 59_999;
    expect(window.idFor('email.send', { to: 'x@y', body: 'hi' })).toBe(a);
    now += 1; // the window opened by the first call ends: bounded, not sliding
    const b = window.idFor('email.send', { to: 'x@y', body: 'hi' });
    expect(b).not.toBe(a);
    expect(b).toMatch(/^session:[0-9a-f-]{36}:\d+$/);
  });

  it('leaves arguments that are not JSON to the ledger to refuse', () => {
    const window = new SessionWindow(60_000);
    expect(window.idFor('t.x', { n: Number.NaN })).toBeUndefined();
  });
});
