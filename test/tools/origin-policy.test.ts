import { describe, expect, it } from 'vitest';
import {
  classifyAddress,
  entriesReaching,
  OriginPolicy,
  parseAllowedOrigin,
} from '../../functions/tools/origin-policy';

describe('parseAllowedOrigin', () => {
  it.each([
    [
      'http://127.0.0.1',
      { scheme: 'http', host: '127.0.0.1', port: undefined, hostKind: 'ip', loopback: true },
    ],
    [
      'https://Hooks.Example.COM:8443/',
      { scheme: 'https', host: 'hooks.example.com', port: 8443, hostKind: 'name' },
    ],
    ['http://localhost', { scheme: 'http', host: 'localhost', hostKind: 'localhost', loopback: true }],
    ['http://[::1]:9000', { host: '[::1]', port: 9000, hostKind: 'ip', loopback: true }],
    ['hooks.example.com', { scheme: undefined, host: 'hooks.example.com', port: undefined }],
    ['http://10.0.0.5', { hostKind: 'ip', loopback: false }],
  ])('parses %j', (entry, expected) => {
    expect(parseAllowedOrigin(entry)).toMatchObject(expected);
  });

  it.each([
    'ftp://example.com',
    'http://user@example.com',
    'http://example.com/path',
    'http://example.com?q',
    'http://example.com:0',
    'http://example.com:70000',
    'http://',
    '',
  ])('refuses the entry %j', (entry) => {
    expect(() => parseAllowedOrigin(entry)).toThrow();
  });

  it('names the bad entry by position, not by value', () => {
    expect(() => new OriginPolicy(['http://ok', 'http://secret@x'], { local: true })).toThrow(/#2/);
    expect(() => new OriginPolicy(['http://ok', 'http://secret@x'], { local: true })).not.toThrow(/secret/);
  });
});

describe('OriginPolicy.checkUrl', () => {
  const local = new OriginPolicy(['http://127.0.0.1', 'http://localhost', 'https://hooks.example.com'], {
    local: true,
  });
  const aws = new OriginPolicy(['http://127.0.0.1', 'https://hooks.example.com', 'api.example.com'], {
    local: false,
  });

  it.each([
    [local, 'http://127.0.0.1:8080/hook', true],
    [local, 'http://localhost:3000/x?y=1', true],
    [local, 'https://hooks.example.com/a', true],
    [local, 'https://HOOKS.example.com:443/a', true],
    [local, 'https://hooks.example.com:8443/a', false], // a name entry without a port means the default port
    [local, 'http://hooks.example.com/a', false], // the entry says https
    [local, 'http://127.0.0.2:8080/', false], // another loopback address is another host
    [local, 'http://2130706433:8080/', true], // the URL parser's numeric form of 127.0.0.1 is the same host
    [local, 'http://[::1]:8080/', false],
    [aws, 'http://127.0.0.1/', true], // explicit http entry; port-less means port 80 on AWS
    [aws, 'http://127.0.0.1:8080/', false], // any port only for loopback in local mode
    [aws, 'https://api.example.com/', true], // a scheme-less entry means https on AWS
    [aws, 'http://api.example.com/', false],
  ] as const)('%#: %s → %s', (policy, url, ok) => {
    expect(policy.checkUrl(url).ok).toBe(ok);
  });

  it('lets a scheme-less entry use plain http in local mode only', () => {
    expect(new OriginPolicy(['127.0.0.1:9000'], { local: true }).checkUrl('http://127.0.0.1:9000/').ok).toBe(
      true,
    );
    expect(new OriginPolicy(['127.0.0.1:9000'], { local: false }).checkUrl('http://127.0.0.1:9000/').ok).toBe(
      false,
    );
    expect(
      new OriginPolicy(['127.0.0.1:9000'], { local: false }).checkUrl('https://127.0.0.1:9000/').ok,
    ).toBe(true);
  });

  it('matches an explicit port exactly, even for loopback in local mode', () => {
    const policy = new OriginPolicy(['http://127.0.0.1:9000'], { local: true });
    expect(policy.checkUrl('http://127.0.0.1:9000/').ok).toBe(true);
    expect(policy.checkUrl('http://127.0.0.1:9001/').ok).toBe(false);
  });

  it.each([
    'http://user:pw@127.0.0.1:8080/',
    'http://user@127.0.0.1:8080/',
    'http://:pw@127.0.0.1:8080/',
    'http://@127.0.0.1:8080/',
    'http:\\\\user@127.0.0.1:8080/',
  ])('refuses credentials in %s', (url) => {
    expect(local.checkUrl(url)).toEqual({ ok: false, reason: 'must not contain credentials (userinfo)' });
  });

  it.each(['file:///etc/passwd', 'ftp://127.0.0.1/', 'javascript:alert(1)', '/relative/path', 'not a url'])(
    'refuses %s',
    (url) => {
      expect(local.checkUrl(url).ok).toBe(false);
    },
  );

  it('never repeats the URL in a reason', () => {
    const verdict = local.checkUrl('http://secret-host.example:1/SECRET');
    expect(verdict.ok).toBe(false);
    expect(JSON.stringify(verdict)).not.toMatch(/secret/i);
  });
});

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['0.0.0.0', 'special'],
    ['::', 'special'],
    ['10.1.2.3', 'special'],
    ['172.16.0.1', 'special'],
    ['172.31.255.255', 'special'],
    ['192.168.1.1', 'special'],
    ['100.64.0.1', 'special'],
    ['169.254.169.254', 'special'],
    ['::ffff:169.254.169.254', 'special'],
    ['::ffff:10.0.0.1', 'special'],
    ['fd00:ec2::254', 'special'],
    ['fc00::1', 'special'],
    ['fe80::1', 'special'],
    ['fe80::1%eth0', 'special'],
    ['ff02::1', 'special'],
    ['224.0.0.251', 'special'],
    ['255.255.255.255', 'special'],
    ['2001:db8::1', 'special'],
    ['::127.0.0.1', 'special'],
    ['2002:7f00:1::', 'special'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::808:808', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['localhost', 'invalid'],
    ['', 'invalid'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('OriginPolicy.addressAllowed', () => {
  const policy = new OriginPolicy([], { local: true });

  it('lets an IP entry reach exactly its own address, whatever its class', () => {
    expect(policy.addressAllowed(parseAllowedOrigin('http://127.0.0.1'), '127.0.0.1')).toBe(true);
    expect(policy.addressAllowed(parseAllowedOrigin('http://127.0.0.1'), '127.0.0.2')).toBe(false);
    expect(policy.addressAllowed(parseAllowedOrigin('http://[::1]'), '0:0:0:0:0:0:0:1')).toBe(true);
    expect(policy.addressAllowed(parseAllowedOrigin('http://169.254.169.254'), '169.254.169.254')).toBe(true);
  });

  it('lets localhost reach loopback addresses only', () => {
    const origin = parseAllowedOrigin('http://localhost');
    expect(policy.addressAllowed(origin, '127.0.0.1')).toBe(true);
    expect(policy.addressAllowed(origin, '::1')).toBe(true);
    expect(policy.addressAllowed(origin, '10.0.0.1')).toBe(false);
    expect(policy.addressAllowed(origin, '8.8.8.8')).toBe(false);
  });

  it('lets a name reach public addresses only', () => {
    const origin = parseAllowedOrigin('https://hooks.example.com');
    expect(policy.addressAllowed(origin, '93.184.215.14')).toBe(true);
    for (const address of [
      '127.0.0.1',
      '::ffff:127.0.0.1',
      '10.0.0.1',
      '169.254.169.254',
      '0.0.0.0',
      'fd00::1',
    ]) {
      expect(policy.addressAllowed(origin, address)).toBe(false);
    }
  });
});

describe('entriesReaching (an allow list that names the deployment’s own endpoints)', () => {
  const upstream = ['http://127.0.0.1:8931/mcp'];

  it('finds an entry naming the endpoint by any name of the same address and port', () => {
    for (const entry of [
      'http://127.0.0.1:8931',
      'http://localhost:8931',
      '127.0.0.1:8931',
      'http://[::ffff:127.0.0.1]:8931',
    ]) {
      expect(entriesReaching(['http://127.0.0.1', entry], upstream, { local: true }), entry).toEqual([
        { entry: 1, endpoint: 0 },
      ]);
    }
  });

  it('leaves port-less loopback entries in local mode (any port, narrowed at run time) and other ports alone', () => {
    expect(
      entriesReaching(['http://127.0.0.1', 'http://localhost', 'http://127.0.0.1:8932'], upstream, {
        local: true,
      }),
    ).toEqual([]);
  });

  it('on AWS a port-less entry means the default port of its scheme (https unless it says http)', () => {
    const upstreams = ['https://mcp.example.com/mcp', 'http://legacy.example.com/mcp'];
    expect(
      entriesReaching(
        ['mcp.example.com', 'http://legacy.example.com', 'https://legacy.example.com'],
        upstreams,
        { local: false },
      ),
    ).toEqual([
      { entry: 0, endpoint: 0 },
      { entry: 1, endpoint: 1 },
    ]);
  });
});
