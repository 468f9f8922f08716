// Reshaping the API's columnar call tree (preorder nodes: parent, depth, name, and one or more
// inclusive measures per node) for the flame graph's other views:
// - inverted (bottom-up): each leaf-most frame at the top level, its callers below it; a
//   node's measure is the self time of the paths that end in it;
// - focus on a function: every call path of one function merged into one tree rooted at it
//   (its outermost call on each path only, so recursion is counted once).
// Measures stay in the API's units (ns); shares are taken against the original root's, so a
// reshaped view's numbers are shares of the same window as the top-down view's.

export interface Tree {
  names: string[];
  parent: Int32Array | number[];
  depth: Int32Array | number[];
  name: Int32Array | number[];
  /** Inclusive measures per node: measures[m][i]. */
  measures: Float64Array[] | number[][];
}

export type View = "top-down" | "inverted" | "focus";

/** Self measure per node: inclusive minus the children's inclusive (never below zero). */
export function selfOf(t: Tree, m: number): Float64Array {
  const tot = t.measures[m], n = t.parent.length;
  const self = Float64Array.from({ length: n }, (_, i) => tot[i]);
  for (let i = 1; i < n; i++) if (t.parent[i] >= 0) self[t.parent[i]] -= tot[i];
  for (let i = 0; i < n; i++) if (self[i] < 0) self[i] = 0;
  return self;
}

/** A trie of name paths with k measures, emitted in preorder with children by name. */
class Trie {
  kids: Map<number, number>[] = [new Map()];
  nameOf: number[] = [];
  vals: number[][];
  constructor(private k: number, root: number) {
    this.nameOf.push(root);
    this.vals = Array.from({ length: k }, () => [0]);
  }
  add(path: number[], w: number[]): void {
    let at = 0;
    for (let m = 0; m < this.k; m++) this.vals[m][0] += w[m];
    for (const nm of path) {
      let nx = this.kids[at].get(nm);
      if (nx === undefined) {
        nx = this.nameOf.length;
        this.kids[at].set(nm, nx);
        this.kids.push(new Map());
        this.nameOf.push(nm);
        for (let m = 0; m < this.k; m++) this.vals[m].push(0);
      }
      at = nx;
      for (let m = 0; m < this.k; m++) this.vals[m][at] += w[m];
    }
  }
  emit(names: string[]): Tree {
    const n = this.nameOf.length;
    const parent = new Int32Array(n), depth = new Int32Array(n), name = new Int32Array(n);
    const measures = Array.from({ length: this.k }, () => new Float64Array(n));
    let out = 0;
    const stack: [number, number, number][] = [[0, -1, 0]];
    while (stack.length) {
      const [node, par, d] = stack.pop()!;
      const me = out++;
      parent[me] = par; depth[me] = d; name[me] = this.nameOf[node];
      for (let m = 0; m < this.k; m++) measures[m][me] = this.vals[m][node];
      const kids = [...this.kids[node].entries()].sort((a, b) => (names[a[0]] < names[b[0]] ? 1 : names[a[0]] > names[b[0]] ? -1 : 0));
      for (const [, c] of kids) stack.push([c, me, d + 1]);
    }
    return { names, parent, depth, name, measures };
  }
}

/** The bottom-up tree: for every node with self time, its path read from the leaf up. */
export function inverted(t: Tree): Tree {
  const k = t.measures.length, n = t.parent.length;
  const selfs = Array.from({ length: k }, (_, m) => selfOf(t, m));
  const trie = new Trie(k, t.name[0]);
  const path: number[] = [];
  for (let i = 1; i < n; i++) {
    const w = selfs.map((s) => s[i]);
    if (w.every((x) => x === 0)) continue;
    path.length = 0;
    for (let p = i; p > 0; p = t.parent[p]) path.push(t.name[p]);
    trie.add(path, w);
  }
  return trie.emit(t.names);
}

/** Every call path of the function named fn merged under one root; null if it never occurs. */
export function focused(t: Tree, fn: number): Tree | null {
  const k = t.measures.length, n = t.parent.length;
  const selfs = Array.from({ length: k }, (_, m) => selfOf(t, m));
  // outer[i]: the outermost node named fn on i's path (or -1)
  const outer = new Int32Array(n).fill(-1);
  for (let i = 1; i < n; i++) {
    const p = t.parent[i];
    outer[i] = p >= 0 && outer[p] >= 0 ? outer[p] : t.name[i] === fn ? i : -1;
  }
  const trie = new Trie(k, fn);
  let any = false;
  const path: number[] = [];
  for (let i = 1; i < n; i++) {
    const o = outer[i];
    if (o < 0) continue;
    any = true;
    const w = selfs.map((s) => s[i]);
    if (w.every((x) => x === 0)) continue;
    path.length = 0;
    for (let p = i; p !== o; p = t.parent[p]) path.push(t.name[p]);
    path.reverse();
    trie.add(path, w);
  }
  return any ? trie.emit(t.names) : null;
}
