/** Insertion-ordered maps kept to a size: the in-memory stores' one eviction rule. */

/** Sets `key` as the newest entry of `map`, then drops the oldest entries beyond `maxEntries`. */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, maxEntries: number): void {
  map.delete(key); // re-inserted last: eviction goes by the age of the latest write
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= maxEntries) {
      break;
    }
    map.delete(oldest);
  }
}
