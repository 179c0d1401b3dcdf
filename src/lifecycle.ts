/**
 * The app's resources in the order they opened, closed again by one routine: after a start that fails
 * part-way and at shutdown alike. Shutdown's steps, all here:
 *
 * 1. the intake stops, all at once (resources opened with `{ intake: true }`): the HTTP server's drain
 *    (readiness 503, `Connection: close` on every answer, in-flight requests finish), the GraphQL
 *    subscriptions and the event workers — in parallel, none waits for another;
 * 2. then every other resource closes in the reverse order of its opening (the subscription
 *    slots, the reader, the limiter store, the database last).
 *
 * A failure while closing one resource does not stop the others from closing.
 */
export interface LifecycleResource {
  name: string;
  close(): unknown;
  intake: boolean;
}

export class Lifecycle {
  private readonly resources: LifecycleResource[] = [];
  private stopping = false;
  private closing: Promise<void> | undefined;

  /** Whether shutdown has begun (readiness answers 503 from then on). */
  readonly isStopping = (): boolean => this.stopping;

  /** Records a resource that just opened. `intake`: it stops at the first step of shutdown, beside the others of its kind. */
  opened(name: string, close: () => unknown, { intake = false }: { intake?: boolean } = {}): void {
    this.resources.push({ name, close, intake });
  }

  /** The names of the resources in the order shutdown closes them (intake first, together). */
  order(): { intake: string[]; rest: string[] } {
    return {
      intake: this.resources.filter((r) => r.intake).map((r) => r.name),
      rest: this.resources
        .filter((r) => !r.intake)
        .map((r) => r.name)
        .reverse(),
    };
  }

  /** Closes everything (once: later calls share the first). Rejects with the first failure, after closing the rest. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopping = true;
      const failures: unknown[] = [];
      const shut = (r: LifecycleResource) =>
        Promise.resolve()
          .then(() => r.close())
          .catch((error: unknown) => void failures.push(error));
      await Promise.all(this.resources.filter((r) => r.intake).map(shut));
      for (const r of this.resources.filter((x) => !x.intake).reverse()) await shut(r);
      if (failures.length) throw failures[0];
    })();
    return this.closing;
  }
}
