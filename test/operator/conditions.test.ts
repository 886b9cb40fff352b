// Status conditions: transition times move only on a status change, generations are
// recorded, other writers' conditions are kept, and transitions become Events.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { conditionTransitions, nextStatus, statusChanged } from '../../operator/reconcile/conditions.ts';
import type { RenderedStatus } from '../../operator/reconcile/resource-types.ts';
import { ConditionSchema } from '../../operator/reconcile/resource-schemas.ts';

function rendered(generation: number, resolved: 'True' | 'False', reason = resolved === 'True' ? 'ResolvedRefs' : 'SecretNotFound'): RenderedStatus {
  return {
    kind: 'Provider',
    name: 'p',
    uid: 'u',
    generation,
    rendered: resolved === 'True',
    conditions: [
      { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'ok' },
      { type: 'ResolvedRefs', status: resolved, reason, message: 'm' },
      { type: 'Ready', status: resolved, reason: resolved === 'True' ? 'Rendered' : reason, message: 'm' },
    ],
  };
}

const T0 = '2025-01-01T00:00:00Z';
const T1 = '2025-01-01T00:01:00Z';

describe('status conditions', () => {
  test('a first status sets every condition with observedGeneration and a valid CamelCase reason', () => {
    const status = nextStatus(undefined, rendered(3, 'True'), T0);
    assert.equal(status.observedGeneration, 3);
    assert.deepEqual(status.conditions?.map((condition) => [condition.type, condition.status, condition.observedGeneration, condition.lastTransitionTime]), [
      ['Accepted', 'True', 3, T0],
      ['ResolvedRefs', 'True', 3, T0],
      ['Ready', 'True', 3, T0],
    ]);
    for (const condition of status.conditions ?? []) assert.ok(ConditionSchema.safeParse(condition).success);
    assert.equal(statusChanged(undefined, status), true);
  });

  test('lastTransitionTime moves only for conditions whose status changed', () => {
    const first = nextStatus(undefined, rendered(1, 'True'), T0);
    const same = nextStatus(first, rendered(1, 'True'), T1);
    assert.equal(statusChanged(first, same), false, 'an unchanged render writes nothing');
    const broken = nextStatus(first, rendered(2, 'False'), T1);
    const times = Object.fromEntries((broken.conditions ?? []).map((condition) => [condition.type, condition.lastTransitionTime]));
    assert.deepEqual(times, { Accepted: T0, ResolvedRefs: T1, Ready: T1 });
    assert.equal(statusChanged(first, broken), true);
  });

  test('transitions name each condition whose status or reason changed; False is a warning', () => {
    const first = nextStatus(undefined, rendered(1, 'True'), T0);
    const broken = nextStatus(first, rendered(1, 'False'), T1);
    const transitions = conditionTransitions(first, broken);
    assert.deepEqual(transitions.map((transition) => [transition.type, transition.from, transition.to, transition.reason, transition.warning]), [
      ['ResolvedRefs', 'True', 'False', 'SecretNotFound', true],
      ['Ready', 'True', 'False', 'SecretNotFound', true],
    ]);
    const otherReason = nextStatus(broken, rendered(1, 'False', 'SecretKeyNotFound'), T1);
    assert.deepEqual(conditionTransitions(broken, otherReason).map((transition) => transition.reason), ['SecretKeyNotFound', 'SecretKeyNotFound']);
    assert.deepEqual(conditionTransitions(broken, broken), []);
  });

  test("conditions written by someone else are kept", () => {
    const foreign = { type: 'Synced', status: 'True', reason: 'GitOps', message: '', lastTransitionTime: T0 };
    const status = nextStatus({ conditions: [foreign] }, rendered(1, 'True'), T1);
    assert.deepEqual(status.conditions?.at(-1), foreign);
  });
});
