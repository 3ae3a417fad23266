/**
 * Rendered activity listings (the JSON text of a whole response), each kept
 * with the version of the data it was rendered from (`findListingVersion`) and
 * served again only while the database still reports that version. Bots poll
 * the same first page over and over; between two writes to the server's log the
 * answer cannot change, so it is rendered once. Per process, checked against
 * the database on every request, so correct with any number of instances.
 *
 * Bounded by the characters it holds (the bodies are mostly ASCII, a byte
 * each); the least recently used listing goes first.
 */
export class ListingCache {
  private readonly listings = new Map<string, { version: string; body: string }>();
  private held = 0;

  constructor(private readonly maxChars: number) {}

  get enabled(): boolean {
    return this.maxChars > 0;
  }

  /** The listing stored under `key` if it was rendered from `version`. */
  get(key: string, version: string): string | undefined {
    const listing = this.listings.get(key);
    if (!listing) return undefined;
    if (listing.version !== version) {
      this.remove(key);
      return undefined;
    }
    // Most recently used last.
    this.listings.delete(key);
    this.listings.set(key, listing);
    return listing.body;
  }

  set(key: string, version: string, body: string): void {
    const size = key.length + body.length;
    if (size > this.maxChars) return;
    this.remove(key);
    this.listings.set(key, { version, body });
    this.held += size;
    for (const [oldest] of this.listings) {
      if (this.held <= this.maxChars) break;
      this.remove(oldest);
    }
  }

  /** Characters held now (keys and bodies). */
  get size(): number {
    return this.held;
  }

  private remove(key: string): void {
    const listing = this.listings.get(key);
    if (!listing) return;
    this.listings.delete(key);
    this.held -= key.length + listing.body.length;
  }
}
