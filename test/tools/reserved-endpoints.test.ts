import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { OriginPolicy } from '../../functions/tools/origin-policy';
import { canonicalAddress, ReservedEndpoints } from '../../functions/tools/reserved-endpoints';

function lanAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) if (entry.family === 'IPv4' && !entry.internal) return entry.address;
  }
  return undefined;
}

describe('ReservedEndpoints', () => {
  const local = new ReservedEndpoints(['http://127.0.0.1:4567', '127.0.0.1:9001']);

  it.each([
    ['127.0.0.1', 4567],
    ['127.0.0.2', 4567],
    ['::1', 4567],
    ['::ffff:127.0.0.1', 9001],
    ['0.0.0.0', 4567],
    ['::', 9001],
  ])('a port of the machine itself is reserved on %s', (address, port) => {
    expect(local.reaches(address, port)).toBe(true);
  });

  it('other ports, and other hosts, are not reserved', () => {
    expect(local.reaches('127.0.0.1', 4568)).toBe(false);
    expect(local.reaches('93.184.215.14', 4567)).toBe(false);
    expect(local.reaches('not an address', 4567)).toBe(false);
  });

  it("the machine's own interface addresses reach a server bound to every interface", () => {
    const lan = lanAddress();
    if (lan === undefined) return; // a machine with loopback only has nothing more to check
    expect(local.reaches(lan, 4567)).toBe(true);
  });

  it('an endpoint on another host reserves that address and port only', () => {
    const remote = new ReservedEndpoints(['https://10.0.0.7']);
    expect(remote.reaches('10.0.0.7', 443)).toBe(true);
    expect(remote.reaches('::ffff:10.0.0.7', 443)).toBe(true);
    expect(remote.reaches('10.0.0.7', 80)).toBe(false);
    expect(remote.reaches('127.0.0.1', 443)).toBe(false);
  });

  it('URLs naming a reserved endpoint by any spelling of its host are recognised', () => {
    for (const url of [
      'http://127.0.0.1:4567/',
      'http://localhost:4567/',
      'http://2130706433:4567/',
      'http://[::ffff:127.0.0.1]:4567/',
      'http://0.0.0.0:9001/x',
    ]) {
      expect(local.namedBy(new URL(url)), url).toBe(true);
    }
    expect(local.namedBy(new URL('http://127.0.0.1:8080/'))).toBe(false);
    const named = new ReservedEndpoints(['sandbox.localdomain:9001']);
    expect(named.namedBy(new URL('http://SANDBOX.localdomain:9001/'))).toBe(true);
    expect(named.namedBy(new URL('http://sandbox.localdomain:9002/'))).toBe(false);
  });

  it('names a malformed entry by position, not by value', () => {
    expect(() => new ReservedEndpoints(['127.0.0.1:1', 'ftp://secret'])).toThrow(/#2/);
    expect(() => new ReservedEndpoints(['127.0.0.1:1', 'ftp://secret'])).not.toThrow(/secret/);
  });

  it('canonicalAddress unwraps IPv4-mapped addresses and drops brackets and zones', () => {
    expect(canonicalAddress('[::ffff:7f00:1]')).toBe('127.0.0.1');
    expect(canonicalAddress('fe80::1%eth0')).toBe('fe80::1');
    expect(canonicalAddress('example.com')).toBeUndefined();
  });
});

describe('OriginPolicy with reserved endpoints', () => {
  it('refuses a reserved endpoint that an entry allows, in the URL check and the connect check', () => {
    const reserved = new ReservedEndpoints(['http://127.0.0.1:4567']);
    const policy = new OriginPolicy(['http://127.0.0.1', 'http://127.0.0.1:4567'], { local: true, reserved });
    const verdict = policy.checkUrl('http://127.0.0.1:4567/');
    expect(verdict).toMatchObject({ ok: false });
    expect(verdict.ok ? '' : verdict.reason).not.toContain('4567');
    expect(policy.checkUrl('http://127.0.0.1:4568/').ok).toBe(true);
    expect(policy.reservedEndpoint('127.0.0.1', 4567)).toBe(true);
    expect(policy.reservedEndpoint('127.0.0.1', 4568)).toBe(false);
  });
});
