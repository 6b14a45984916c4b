import { Emitter } from "./emitter.ts";

export type StoreEvents = {
  saved: [key: string, value: string];
  deleted: [key: string];
};

/** A key/value store that announces its changes. */
export class Store extends Emitter<StoreEvents> {
  #data = new Map<string, string>();

  set(key: string, value: string): void {
    this.#data.set(key, value);
    this.emit("saved", key, value);
  }

  delete(key: string): boolean {
    const existed = this.#data.delete(key);
    if (existed) {
      this.emit("deleted", key);
    }
    return existed;
  }

  get(key: string): string | undefined {
    return this.#data.get(key);
  }
}
