import { ArgsType, Field, Int, ObjectType, type ClassType } from 'type-graphql';
import { DomainError, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type Page, type PageRequest } from '../../domain/index.js';
import { encodeCursor } from '../../domain/pagination.js';

@ObjectType('PageInfo', { simpleResolvers: true, description: 'Where a page sits in its list (Relay cursor connections).' })
export class PageInfo {
  @Field(() => Boolean, { description: 'Whether a page follows this one: ask for it with `after: endCursor`.' })
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Cursor of the last edge; null on an empty page.' })
  endCursor!: string | null;

  @Field(() => Boolean, {
    description: 'Relay: whether edges come before this page. Paging is forward only, so this is true exactly when `after` was given.',
  })
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Cursor of the first edge; null on an empty page.' })
  startCursor!: string | null;
}

export interface Connection<T> {
  edges: Array<{ node: T; cursor: string }>;
  pageInfo: PageInfo;
}

/** Declares `<Name>Edge` and the fields of a connection of a node type. */
export function connectionType<T extends object>(name: string, node: ClassType<T>) {
  @ObjectType(`${name}Edge`, { simpleResolvers: true, description: `One node of a ${name}Connection, with its cursor.` })
  class Edge {
    @Field(() => node)
    node!: T;

    @Field(() => String, { description: 'Opaque cursor: pass it as `after` to continue after this edge.' })
    cursor!: string;
  }

  // Unnamed and never referenced: only the subclass (`@ObjectType('PetConnection') class PetConnection extends …`) is emitted.
  @ObjectType({ simpleResolvers: true })
  abstract class ConnectionType implements Connection<T> {
    @Field(() => [Edge])
    edges!: Edge[];

    @Field(() => PageInfo)
    pageInfo!: PageInfo;
  }
  return ConnectionType;
}

@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, defaultValue: DEFAULT_PAGE_SIZE, description: `Page size, 1 to ${MAX_PAGE_SIZE}.` })
  first?: number;

  @Field(() => String, { nullable: true, description: '`endCursor` of the previous page.' })
  after?: string | null;
}

/**
 * One edge of a page. Its cursor is encoded only when the query asks for it: most queries select `node` alone,
 * and a cursor costs a string, a Buffer and a base64 pass per edge.
 */
class PageEdge<T> {
  constructor(
    readonly node: T,
    private readonly id: number,
    private readonly cursorOf: (id: number) => string,
  ) {}
  get cursor(): string {
    return this.cursorOf(this.id);
  }
}

/** A page's `pageInfo`: its two cursors, too, are encoded only when selected. */
class PageEnds<T> implements PageInfo {
  constructor(
    readonly hasNextPage: boolean,
    readonly hasPreviousPage: boolean,
    private readonly edges: readonly PageEdge<T>[],
  ) {}
  get endCursor(): string | null {
    return this.edges.at(-1)?.cursor ?? null;
  }
  get startCursor(): string | null {
    return this.edges[0]?.cursor ?? null;
  }
}

/** A domain page as a Relay connection: `edges` at once, `pageInfo` (and its cursors) when asked for. */
class PageConnection<T> implements Connection<T> {
  readonly edges: PageEdge<T>[];
  constructor(
    page: Page<T>,
    idOf: (node: T) => number,
    private readonly hasNext: boolean,
    private readonly after: string | null | undefined,
    cursorOf: (id: number) => string,
  ) {
    this.edges = page.items.map((node) => new PageEdge(node, idOf(node), cursorOf));
  }
  get pageInfo(): PageInfo {
    return new PageEnds(this.hasNext, Boolean(this.after), this.edges);
  }
}

/**
 * A domain page as a Relay connection; cursors are the same keyset cursors REST puts in `Link`. Edges and
 * `pageInfo` are read as properties (resolvers' parents), never spread: their cursors are getters.
 */
export function toConnection<T>(
  page: Page<T>,
  idOf: (node: T) => number,
  after?: string | null,
  cursorOf: (id: number) => string = encodeCursor,
): Connection<T> {
  return new PageConnection(page, idOf, page.nextCursor !== null, after, cursorOf);
}

const ARGUMENT_OF: Record<string, string> = { limit: 'first', cursor: 'after' };

/**
 * Loads one page through the domain and returns it as a connection. The domain names the page
 * parameters as REST does (`limit`, `cursor`); its validation details are renamed to `first`/`after`.
 */
export async function paged<T>(
  args: PageArgs,
  load: (page: PageRequest) => Promise<Page<T>>,
  idOf: (node: T) => number,
  cursorOf?: (id: number) => string,
): Promise<Connection<T>> {
  let page: Page<T>;
  try {
    page = await load({ limit: args.first ?? DEFAULT_PAGE_SIZE, cursor: args.after ?? null });
  } catch (error) {
    if (error instanceof DomainError && error.code === 'VALIDATION_FAILED' && error.details?.some((d) => ARGUMENT_OF[d.path])) {
      throw new DomainError(
        error.code,
        error.message,
        error.details.map((d) => ({ ...d, path: ARGUMENT_OF[d.path] ?? d.path })),
      );
    }
    throw error;
  }
  return toConnection(page, idOf, args.after, cursorOf);
}
