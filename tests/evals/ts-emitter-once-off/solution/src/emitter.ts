/** Maps event names to their listener argument lists, e.g. `{ saved: [id: string] }`. */
export type EventMap = { [event: string]: unknown[] };

export type Listener<Args extends unknown[]> = (...args: Args) => void;

interface Registration {
  listener: Listener<any[]>;
  once: boolean;
}

export class Emitter<Events extends EventMap> {
  #listeners = new Map<keyof Events, Registration[]>();

  /** Registers a listener; returns a function that unregisters it. */
  on<E extends keyof Events>(event: E, listener: Listener<Events[E]>): () => void {
    return this.#add(event, { listener: listener as Listener<any[]>, once: false });
  }

  /** Registers a listener for the next emit of `event` only; returns a function that unregisters it. */
  once<E extends keyof Events>(event: E, listener: Listener<Events[E]>): () => void {
    return this.#add(event, { listener: listener as Listener<any[]>, once: true });
  }

  /** Removes one registration of `listener`; false if it was not registered. */
  off<E extends keyof Events>(event: E, listener: Listener<Events[E]>): boolean {
    const list = this.#listeners.get(event);
    const index = list ? list.findIndex((r) => r.listener === listener) : -1;
    if (!list || index < 0) {
      return false;
    }
    // Replace rather than splice: an emit in progress keeps iterating its own snapshot.
    this.#listeners.set(event, [...list.slice(0, index), ...list.slice(index + 1)]);
    return true;
  }

  listenerCount<E extends keyof Events>(event: E): number {
    return this.#listeners.get(event)?.length ?? 0;
  }

  /** Calls the listeners registered when the emit starts, in registration order. */
  emit<E extends keyof Events>(event: E, ...args: Events[E]): void {
    const snapshot = this.#listeners.get(event);
    if (!snapshot) {
      return;
    }
    for (const registration of snapshot) {
      const current = this.#listeners.get(event) ?? [];
      if (registration.once) {
        if (!current.includes(registration)) {
          continue;
        }
        this.#remove(event, registration);
      }
      registration.listener(...args);
    }
  }

  #add(event: keyof Events, registration: Registration): () => void {
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), registration]);
    return () => this.#remove(event, registration);
  }

  #remove(event: keyof Events, registration: Registration): void {
    const list = this.#listeners.get(event);
    if (list?.includes(registration)) {
      this.#listeners.set(
        event,
        list.filter((r) => r !== registration),
      );
    }
  }
}
