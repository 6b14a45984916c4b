/** Maps event names to their listener argument lists, e.g. `{ saved: [id: string] }`. */
export type EventMap = { [event: string]: unknown[] };

export type Listener<Args extends unknown[]> = (...args: Args) => void;

export class Emitter<Events extends EventMap> {
  #listeners = new Map<keyof Events, Listener<any[]>[]>();

  /** Registers a listener; returns a function that unregisters it. */
  on<E extends keyof Events>(event: E, listener: Listener<Events[E]>): () => void {
    const list = this.#listeners.get(event) ?? [];
    list.push(listener as Listener<any[]>);
    this.#listeners.set(event, list);
    return () => {
      const current = this.#listeners.get(event);
      const index = current ? current.indexOf(listener as Listener<any[]>) : -1;
      if (current && index >= 0) {
        current.splice(index, 1);
      }
    };
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
