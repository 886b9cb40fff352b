import type { Condition, ResourceStatus } from './resource-schemas.ts';
import type { DesiredCondition, RenderedStatus } from './resource-types.ts';

// Status conditions as Kubernetes API conventions want them: one entry per type, with
// observedGeneration, a CamelCase reason, and lastTransitionTime that moves only when the
// status value changes. Pure: the k8s layer supplies `now` and writes the result.

const MAX_MESSAGE = 1024;

/** The status a resource should carry, keeping transition times of unchanged conditions. */
export function nextStatus(current: unknown, rendered: RenderedStatus, now: string): ResourceStatus {
  const existing = conditionsOf(current);
  const managed = new Set(rendered.conditions.map((condition) => condition.type));
  const conditions: Condition[] = rendered.conditions.map((desired) => {
    const previous = existing.find((condition) => condition.type === desired.type);
    return {
      type: desired.type,
      status: desired.status,
      observedGeneration: rendered.generation,
      lastTransitionTime: previous !== undefined && previous.status === desired.status ? previous.lastTransitionTime : now,
      reason: desired.reason,
      message: truncate(desired.message),
    };
  });
  // Conditions of other writers are kept as they are.
  for (const other of existing) if (!managed.has(other.type as DesiredCondition['type'])) conditions.push(other);
  return { observedGeneration: rendered.generation, conditions };
}

/** Whether writing `next` would change anything (avoids a write per resource per render). */
export function statusChanged(current: unknown, next: ResourceStatus): boolean {
  const existing = current as ResourceStatus | undefined;
  if (existing === undefined || existing.observedGeneration !== next.observedGeneration) return true;
  const before = existing.conditions ?? [];
  const after = next.conditions ?? [];
  if (before.length !== after.length) return true;
  return after.some((condition, index) => {
    const previous = before[index];
    return (
      previous === undefined ||
      previous.type !== condition.type ||
      previous.status !== condition.status ||
      previous.reason !== condition.reason ||
      previous.message !== condition.message ||
      previous.observedGeneration !== condition.observedGeneration ||
      previous.lastTransitionTime !== condition.lastTransitionTime
    );
  });
}

export interface ConditionTransition {
  readonly type: string;
  readonly from: string | undefined;
  readonly to: string;
  readonly reason: string;
  readonly message: string;
  /** Warning when a condition turned False. */
  readonly warning: boolean;
}

/** Conditions whose status or reason changed: each becomes a Kubernetes Event. */
export function conditionTransitions(current: unknown, next: ResourceStatus): ConditionTransition[] {
  const existing = conditionsOf(current);
  const transitions: ConditionTransition[] = [];
  for (const condition of next.conditions ?? []) {
    const previous = existing.find((candidate) => candidate.type === condition.type);
    if (previous !== undefined && previous.status === condition.status && previous.reason === condition.reason) continue;
    transitions.push({
      type: condition.type,
      from: previous?.status,
      to: condition.status,
      reason: condition.reason,
      message: condition.message,
      warning: condition.status === 'False',
    });
  }
  return transitions;
}

function conditionsOf(status: unknown): Condition[] {
  const conditions = (status as { conditions?: unknown } | undefined)?.conditions;
  return Array.isArray(conditions) ? (conditions as Condition[]) : [];
}

function truncate(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 1)}…`;
}
