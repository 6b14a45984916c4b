/** Maps event names to their listener argument lists, e.g. `{ saved: [id: string] }`. */
export type EventMap = { [event: string]: unknown[] };

export type Listener<Args extends unknown[]> = (...args: Args) => void;

type Wrapped = Listener<any[]> & { original?: Listener<any[]> };

export class Emitter<Events extends EventMap> {
  #listeners = new Map<keyof Events, Wrapped[]>();

  /** Registers a listener; returns a function that unregisters it. */
  on<E extends keyof Events>(event: E, listener: Listener<Events[E]>): () => void {
    const list = this.#listeners.get(event) ?? [];
    list.push(listener as Wrapped);
    this.#listeners.set(event, list);
    return () => {
      this.off(event, listener);
    };
  }

  /** Registers a listener for the next emit only. */
  once<E extends keyof Events>(event: E, listener: Listener<Events[E]>): () => void {
    const wrapper: Wrapped = (...args: any[]) => {
      this.off(event, listener);
      (listener as Listener<any[]>)(...args);
    };
    wrapper.original = listener as Listener<any[]>;
    const list = this.#listeners.get(event) ?? [];
    list.push(wrapper);
    this.#listeners.set(event, list);
    return () => {
      this.off(event, listener);
    };
  }

  off<E extends keyof Events>(event: E, listener: Listener<Events[E]>): boolean {
    const list = this.#listeners.get(event);
    if (!list) {
      return false;
    }
    const index = list.findIndex((l) => l === listener || l.original === listener);
    if (index < 0) {
      return false;
    }
    list.splice(index, 1);
    return true;
  }

  listenerCount<E extends keyof Events>(event: E): number {
    return this.#listeners.get(event)?.length ?? 0;
  }

  /** Calls the event's listeners in registration order. */
  emit<E extends keyof Events>(event: E, ...args: Events[E]): void {
    const list = this.#listeners.get(event);
    if (!list) {
      return;
    }
    for (const listener of list) {
      listener(...args);
    }
  }
}
