import type { RestHandlers } from './router.js';
import type { EventView } from '../domain/index.js';
import { eventRepresentation } from '../domain/representations.js';

/** The event feed, `GET /v1/events`: a page of events and, when more follow, `Link` to the next with `after`. */
export function eventsRoutes(): RestHandlers {
  return {
    listEvents: async ({ query }, { domain, actor, url }) => {
      const page = await domain.events.listEvents(actor, { after: query.after, types: query.types }, query.limit);
      const headers: Record<string, string> = {};
      if (page.nextCursor) {
        const next = new URL(url);
        next.searchParams.set('after', page.nextCursor);
        headers.Link = `<${next.pathname}${next.search}>; rel="next"`;
      }
      return { body: page.items.map((e: EventView) => eventRepresentation(e)), headers };
    },
  };
}
