import { type ChannelKey, type ChannelTarget, targetKey } from "~/lib/protocol/channel-key.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { compileRoutePatterns, type RoutePatterns } from "~/lib/routes/patterns.ts";
import { pathSegments, placeholders, routePath, templateSegment } from "~/lib/routes/template.ts";
import { log } from "~/lib/server/logger.ts";

export type RouteTemplatesOptions = {
  /** Distinct names one position of a namespace's routes may take; one more folds the position into `{name}`. */
  maxNames: number;
  /** Names kept per namespace (their hashes); past it the namespace's counts start again (its folds stay). */
  maxNamesPerNamespace: number;
  /** Names kept in all; past it the counts of the namespaces that published least recently are dropped first. */
  maxNamesInAll: number;
  /** Folded positions per namespace; past it every name at a position not counted yet is folded. */
  maxFoldsPerNamespace: number;
  /** Names and folds kept to be told to the other nodes of a cluster until they are taken (takeShared). */
  maxShared: number;
};

export const defaultRouteTemplatesOptions: RouteTemplatesOptions = {
  maxNames: 50,
  maxNamesPerNamespace: 20_000,
  maxNamesInAll: 500_000,
  maxFoldsPerNamespace: 1_000,
  maxShared: 20_000,
};

/** What one node tells the others (ClusterNode): the positions it folded, the names it counted, the patterns set on it. */
export type SharedRoutes = {
  folds: Array<[ChannelKey, string]>;
  names: Array<[ChannelKey, string, number[]]>;
  /** Namespaces whose patterns an admin set on this node, with the patterns. */
  patterns?: Array<[string, string[]]>;
};

/** Namespaces and links whose routes are followed at once; the one that published least recently goes first. */
const maxNamespaces = 100_000;

type Namespace = {
  patterns: RoutePatterns | null;
  folds: Set<string>;
  /** By route prefix (the route up to a position, `/users`): the hashes of the names seen right after it. */
  names: Map<string, Set<number>>;
  held: number;
};

/** FNV-1a: a name's 32-bit hash. Two names of one position colliding count as one, which only delays a fold. */
function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Gives every HTTP event its route at ingest (`http_route`): the namespace's explicit patterns first (an admin's,
 * which win), else the path's template (lib/routes/template.ts) with the guard applied: a position of the
 * namespace's routes that has taken more than `maxNames` distinct names (`/users/alice`, `/users/bob`, ...) is folded
 * into `{name}` from then on, so a namespace's routes stay few whatever its paths hold. Bounded in memory (names are
 * kept as hashes, per namespace and in all) and in work per event (one pass over the path's segments).
 *
 * In a cluster each node counts what it ingests and tells the others (takeShared / merge through ClusterNode), so
 * every node counts the names of all of them and folds the same positions; folds and patterns are also kept in the
 * database (the runtime's `onFold` and `load`), so a restarted node starts from them.
 */
export class RouteTemplates {
  private readonly options: RouteTemplatesOptions;
  /** In the order they last published (oldest first): the first dropped when names in all pass their bound. */
  private readonly namespaces = new Map<ChannelKey, Namespace>();
  private held = 0;
  private shared: SharedRoutes = { folds: [], names: [] };
  private sharedCount = 0;
  private readonly onFold: ((key: ChannelKey, prefix: string) => void) | undefined;

  constructor(options: Partial<RouteTemplatesOptions> = {}, hooks: { onFold?: (key: ChannelKey, prefix: string) => void } = {}) {
    this.options = { ...defaultRouteTemplatesOptions, ...options };
    this.onFold = hooks.onFold;
  }

  private state(key: ChannelKey): Namespace {
    let ns = this.namespaces.get(key);
    if (!ns) {
      if (this.namespaces.size >= maxNamespaces) this.dropOldest();
      ns = { patterns: null, folds: new Set(), names: new Map(), held: 0 };
      this.namespaces.set(key, ns);
    }
    return ns;
  }

  /** The namespace (or link) that published least recently, unless an admin set its patterns. */
  private dropOldest(): void {
    let steps = 0;
    for (const [key, ns] of this.namespaces) {
      if (++steps > 1000) return;
      if (ns.patterns) continue;
      this.held -= ns.held;
      this.namespaces.delete(key);
      return;
    }
  }

  /** Patterns and folds kept in the database, as a server starts. */
  load({ patterns, folds }: { patterns: ReadonlyArray<[string, string[]]>; folds: ReadonlyArray<[string, string]> }): void {
    for (const [namespaceId, list] of patterns) this.setPatterns(namespaceId, list);
    for (const [namespaceId, prefix] of folds) this.fold(`ns:${namespaceId}`, prefix, false);
  }

  /**
   * A namespace's explicit patterns (checked by the service that saved them; refused ones are logged and dropped).
   * `isOurs`: set by an admin on this node, so the other nodes are told.
   */
  setPatterns(namespaceId: string, list: readonly string[], isOurs = false): void {
    const compiled = compileRoutePatterns(list);
    if (!compiled.ok) {
      log.warn("route patterns refused", { namespaceId, error: compiled.error });
      return;
    }
    this.state(`ns:${namespaceId}`).patterns = compiled.compiled.patterns.length > 0 ? compiled.compiled : null;
    if (!isOurs) return;
    this.shared.patterns ??= [];
    this.shared.patterns.push([namespaceId, [...compiled.compiled.patterns]]);
    this.sharedCount++;
  }

  patternsOf(namespaceId: string): readonly string[] {
    return this.namespaces.get(`ns:${namespaceId}`)?.patterns?.patterns ?? [];
  }

  /** Sets every event's route (an HTTP event's from its path; any other kind's is ""). Called once per ingested batch. */
  assign(target: ChannelTarget, events: readonly TracedEvent[]): void {
    const key = targetKey(target);
    const ns = this.state(key);
    // Most recently published last.
    this.namespaces.delete(key);
    this.namespaces.set(key, ns);
    for (const e of events) e.http_route = this.routeOf(key, ns, e);
  }

  /** The route of one event (the place to add a new kind's: a database call's is its normalised statement). */
  private routeOf(key: ChannelKey, ns: Namespace, e: TracedEvent): string {
    switch (e.protocol) {
      case "http":
        return this.httpRoute(key, ns, e.http_req_path);
      default:
        return "";
    }
  }

  /** The route of a request-line target in a namespace (also what the tests ask directly). */
  route(target: ChannelTarget, requestTarget: string): string {
    const key = targetKey(target);
    return this.httpRoute(key, this.state(key), requestTarget);
  }

  private httpRoute(key: ChannelKey, ns: Namespace, target: string): string {
    const path = routePath(target);
    if (path === null) return "";
    const { segments, isCut } = pathSegments(path);
    if (ns.patterns) {
      const matched = ns.patterns.match(segments);
      if (matched !== null) return matched;
    }
    let route = "";
    for (const segment of segments) {
      const t = templateSegment(segment);
      if (t.isValue || segment === "") {
        route += `/${t.text}`;
        continue;
      }
      route += this.isFolded(key, ns, route, segment) ? `/${placeholders.name}` : `/${segment}`;
    }
    if (isCut) route += `/${placeholders.rest}`;
    return route || "/";
  }

  /** Counts a name at the position after `prefix`; true when the position is (or now becomes) folded. */
  private isFolded(key: ChannelKey, ns: Namespace, prefix: string, name: string): boolean {
    if (ns.folds.has(prefix)) return true;
    const hash = hashOf(name);
    let seen = ns.names.get(prefix);
    if (seen?.has(hash)) return false;
    if (!seen) {
      if (ns.folds.size >= this.options.maxFoldsPerNamespace) return true;
      seen = new Set();
      ns.names.set(prefix, seen);
    }
    if (seen.size >= this.options.maxNames) {
      this.fold(key, prefix, true);
      return true;
    }
    this.count(ns, seen, hash);
    this.share("names", key, prefix, hash);
    return false;
  }

  private count(ns: Namespace, seen: Set<number>, hash: number): void {
    seen.add(hash);
    ns.held++;
    this.held++;
    if (ns.held > this.options.maxNamesPerNamespace) this.forget(ns);
    if (this.held > this.options.maxNamesInAll) {
      for (const other of this.namespaces.values()) {
        if (this.held <= this.options.maxNamesInAll * 0.9) break;
        this.forget(other);
      }
    }
  }

  private forget(ns: Namespace): void {
    this.held -= ns.held;
    ns.held = 0;
    ns.names.clear();
  }

  private fold(key: ChannelKey, prefix: string, isOurs: boolean): void {
    const ns = this.state(key);
    if (ns.folds.has(prefix)) return;
    if (ns.folds.size >= this.options.maxFoldsPerNamespace) return;
    ns.folds.add(prefix);
    const seen = ns.names.get(prefix);
    if (seen) {
      ns.held -= seen.size;
      this.held -= seen.size;
      ns.names.delete(prefix);
    }
    if (!isOurs) return;
    this.onFold?.(key, prefix);
    this.share("folds", key, prefix);
  }

  private share(what: "folds" | "names", key: ChannelKey, prefix: string, hash?: number): void {
    if (this.sharedCount >= this.options.maxShared) return;
    this.sharedCount++;
    if (what === "folds") {
      this.shared.folds.push([key, prefix]);
      return;
    }
    const last = this.shared.names.at(-1);
    if (last && last[0] === key && last[1] === prefix) last[2].push(hash as number);
    else this.shared.names.push([key, prefix, [hash as number]]);
  }

  /** What this node counted and folded since the last call, for the other nodes; null when nothing. */
  takeShared(): SharedRoutes | null {
    if (this.sharedCount === 0) return null;
    const taken = this.shared;
    this.shared = { folds: [], names: [] };
    this.sharedCount = 0;
    return taken;
  }

  /** What another node counted and folded: counted here too (not told on), so every node folds alike. */
  merge(other: SharedRoutes): void {
    for (const [namespaceId, list] of other.patterns ?? []) this.setPatterns(namespaceId, list);
    for (const [key, prefix] of other.folds) this.fold(key, prefix, false);
    for (const [key, prefix, hashes] of other.names) {
      const ns = this.state(key);
      if (ns.folds.has(prefix)) continue;
      let seen = ns.names.get(prefix);
      for (const hash of hashes) {
        if (seen?.has(hash)) continue;
        if (!seen) {
          if (ns.folds.size >= this.options.maxFoldsPerNamespace) break;
          seen = new Set();
          ns.names.set(prefix, seen);
        }
        if (seen.size >= this.options.maxNames) {
          // Both nodes reach the same count from the same names: each folds, and each tells the others.
          this.fold(key, prefix, true);
          break;
        }
        this.count(ns, seen, hash);
        // Counting may have dropped this namespace's counts (its bound): what is left starts again.
        if (ns.names.get(prefix) !== seen) break;
      }
    }
  }

  /** Names counted now, in all (what the memory bound holds). */
  get namesHeld(): number {
    return this.held;
  }

  foldsOf(key: ChannelKey): string[] {
    return [...(this.namespaces.get(key)?.folds ?? [])];
  }
}
