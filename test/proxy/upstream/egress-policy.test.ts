import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileEgressPolicy, guardedLookup } from '../../../proxy/upstream/egress-policy.ts';
import { EgressDeniedError } from '../../../proxy/errors.ts';

describe('egress policy', () => {
  const none = compileEgressPolicy([]);
  const DENIED: ReadonlyArray<readonly [string, RegExp]> = [
    ['127.0.0.1', /loopback/],
    ['10.1.2.3', /private/],
    ['172.16.5.4', /private/],
    ['192.168.1.1', /private/],
    ['169.254.169.254', /link-local \/ cloud metadata/],
    ['100.64.0.1', /carrier-grade NAT/],
    ['0.0.0.0', /unspecified/],
    ['::1', /loopback/],
    ['fd00:ec2::254', /unique local/],
    ['fe80::1', /link-local/],
    ['::ffff:127.0.0.1', /loopback/],
  ];
  for (const [address, reason] of DENIED) {
    test(`denied by default: ${address}`, () => {
      const denied = none.check(address, address);
      assert.ok(denied !== undefined && reason.test(denied), denied);
      assert.match(denied ?? '', /egress\.allow/);
    });
  }

  test('public addresses are allowed by default', () => {
    for (const address of ['8.8.8.8', '104.18.6.192', '2606:4700::6810:4ac0']) assert.equal(none.check('api.example.com', address), undefined);
  });

  test('cloud metadata host names are denied even if they resolved publicly', () => {
    assert.match(none.check('metadata.google.internal', '8.8.8.8') ?? '', /cloud metadata/);
  });

  test('allow entries: CIDRs, single addresses, host names and *.suffix patterns', () => {
    const policy = compileEgressPolicy(['127.0.0.0/8', '10.0.0.7', 'localhost', '*.svc.cluster.local', 'fd00::/8']);
    assert.equal(policy.check('127.9.9.9', '127.9.9.9'), undefined);
    assert.equal(policy.check('10.0.0.7', '10.0.0.7'), undefined);
    assert.ok(policy.check('10.0.0.8', '10.0.0.8'));
    assert.equal(policy.check('localhost', '::1'), undefined);
    assert.equal(policy.check('vllm.models.svc.cluster.local', '10.96.0.12'), undefined);
    assert.ok(policy.check('svc.cluster.local.evil.com', '10.96.0.12'), 'suffix match is exact');
    assert.equal(policy.check('x', 'fd12::1'), undefined);
  });

  test('the check runs on resolved addresses: a name resolving to loopback is refused', async () => {
    const lookup = guardedLookup(() => none);
    const error = await new Promise<unknown>((resolve) => lookup('localhost', {}, (err) => resolve(err)));
    assert.ok(error instanceof EgressDeniedError);
    assert.equal(error.code, 'AIGW_ERR_EGRESS_DENIED');
    const allowed = guardedLookup(() => compileEgressPolicy(['127.0.0.0/8', '::1']));
    const address = await new Promise<unknown>((resolve) => allowed('localhost', {}, (err, addr) => resolve(err ?? addr)));
    assert.match(String(address), /^(127\.0\.0\.1|::1)$/);
  });
});
