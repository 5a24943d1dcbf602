/** Listeners by key, each told of its own key's events: how the in-process stores watch and wake. */
export class KeyedListeners<E> {
  private readonly byKey = new Map<string, Set<(event: E) => void>>();

  /** Adds `listener` to `key`'s; returns the function that takes it off again (the key's entry goes with its last). */
  add(key: string, listener: (event: E) => void): () => void {
    let listeners = this.byKey.get(key);
    if (!listeners) {
      listeners = new Set();
      this.byKey.set(key, listeners);
    }
    const held = listeners;
    held.add(listener);
    return () => {
      held.delete(listener);
      if (held.size === 0 && this.byKey.get(key) === held) {
        this.byKey.delete(key);
      }
    };
  }

  /** Tells `key`'s listeners of `event`, those added meanwhile not; one that throws does not stop the others. */
  emit(key: string, event: E): void {
    const listeners = this.byKey.get(key);
    if (!listeners) {
      return;
    }
    for (const listener of [...listeners]) {
      try {
        listener(event);
      } catch {
        // A listener is the server's own; it handles its own failures.
      }
    }
  }
}
