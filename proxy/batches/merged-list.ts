import type { Page } from '../files/file-store.ts';
import type { ListQuery } from './request-validation.ts';

// One list out of two sources: the gateway's own objects (newest first) and then the
// provider's. `after` says where the previous page ended: a gateway id continues in the
// gateway's list (and on into the provider's when it runs out), a provider id continues in
// the provider's list only. A page that ends exactly where the gateway's objects end says
// has_more when a provider list follows, so the next page may be the provider's first.

export interface MergeInput {
  readonly query: ListQuery;
  readonly isGatewayId: (id: string) => boolean;
  readonly gatewayPage: (after: string | undefined, limit: number) => Promise<Page<Record<string, unknown>>>;
  /** The provider's list answer (`{ data, has_more, … }`); undefined when there is no provider to ask. */
  readonly providerPage: ((after: string | undefined, limit: number) => Promise<Record<string, unknown>>) | undefined;
}

export interface MergedList {
  object: 'list';
  data: Array<Record<string, unknown>>;
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export async function mergeLists(input: MergeInput): Promise<MergedList> {
  const { query } = input;
  const providerCursor = query.after !== undefined && !input.isGatewayId(query.after);
  const data: Array<Record<string, unknown>> = [];
  let hasMore = false;
  if (!providerCursor) {
    const page = await input.gatewayPage(query.after, query.limit);
    data.push(...page.items);
    hasMore = page.hasMore;
  }
  const room = query.limit - data.length;
  if (!hasMore && input.providerPage !== undefined) {
    if (room > 0) {
      const answer = await input.providerPage(providerCursor ? query.after : undefined, room);
      const items = Array.isArray(answer['data']) ? (answer['data'] as Array<Record<string, unknown>>) : [];
      data.push(...items.slice(0, room));
      hasMore = answer['has_more'] === true || items.length > room;
    } else {
      hasMore = true;
    }
  }
  const idOf = (item: Record<string, unknown> | undefined): string | null => (typeof item?.['id'] === 'string' ? item['id'] : null);
  return { object: 'list', data, first_id: idOf(data[0]), last_id: idOf(data.at(-1)), has_more: hasMore };
}
