/**
 * Why nothing goes to a subscriber: deleted, unsubscribed, disabled (410 Gone, …) or paused by
 * an admin.
 */
export function inactiveReason(subscriber: {
  deleted?: boolean;
  unsubscribed: boolean;
  disabled_reason: string | null;
}): string {
  if (subscriber.deleted) return 'subscriber deleted';
  if (subscriber.unsubscribed) return 'subscriber unsubscribed';
  return subscriber.disabled_reason
    ? `subscriber is disabled: ${subscriber.disabled_reason}`
    : 'subscriber is paused (active = false)';
}
