/**
 * The `matches` operator's regular expressions: a linear-time matcher for a safe subset of RE2 syntax.
 *
 * Why not RegExp: JavaScript's engine backtracks, so a pattern like `(a+)+$` takes exponential time on a long
 * URL, and published events (hence URLs) are attacker-controlled. Here a pattern compiles to a Thompson NFA,
 * simulated through a lazily built, size-capped DFA cache: the cost is O(pattern states x URL length) at worst,
 * O(URL length) once the cache is warm, whatever the pattern.
 *
 * The subset (identical meaning in RE2, so DuckDB's regexp_matches and ClickHouse's match agree with it):
 * literals, `.`, classes `[a-z]`/`[^...]`, `\d \D \w \W \s \S`, escaped metacharacters, anchors `^ $`, groups
 * `(...)` and `(?:...)`, alternation `|`, quantifiers `* + ? {n} {n,} {n,m}` (lazy `?` suffix accepted, n,m <= 100).
 * Not supported (rejected with a message): backreferences, lookaround, named groups, flags, `\b`.
 * Matching is unanchored (like RE2's partial match) and over UTF-16 code units.
 */

export const maxPatternLength = 512;
const maxRepeat = 100;
const maxStates = 4000;
const maxDfaStates = 2000;
/** Steps charged per DFA state built beyond the NFA states it looks at: its key, map and allocation. */
const buildSteps = 32;

export class RegexSyntaxError extends Error {
  override name = "RegexSyntaxError";
  constructor(
    message: string,
    /** 0-based index in the pattern. */
    readonly position: number,
  ) {
    super(message);
  }
}

type Range = readonly [number, number];
type Node =
  | { t: "char"; c: number }
  | { t: "class"; ranges: Range[]; negated: boolean }
  | { t: "any" }
  | { t: "bol" }
  | { t: "eol" }
  | { t: "empty" }
  | { t: "cat"; items: Node[] }
  | { t: "alt"; items: Node[] }
  | { t: "repeat"; node: Node; min: number; max: number };

const digit: Range[] = [[48, 57]];
const word: Range[] = [
  [48, 57],
  [65, 90],
  [95, 95],
  [97, 122],
];
const space: Range[] = [
  [9, 13],
  [32, 32],
];

function negate(ranges: Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Range[] = [];
  let next = 0;
  for (const [lo, hi] of sorted) {
    if (lo > next) out.push([next, lo - 1]);
    next = Math.max(next, hi + 1);
  }
  if (next <= 0xffff) out.push([next, 0xffff]);
  return out;
}

const metachars = "\\.+*?()|[]{}^$/-";

class RegexParser {
  private i = 0;
  private groupDepth = 0;
  constructor(private readonly src: string) {}

  parse(): Node {
    const node = this.alternation();
    if (this.i < this.src.length) {
      throw new RegexSyntaxError(`unmatched ")" in regex`, this.i);
    }
    return node;
  }

  private peek(): string | undefined {
    return this.src[this.i];
  }

  private alternation(): Node {
    const items = [this.concatenation()];
    while (this.peek() === "|") {
      this.i++;
      items.push(this.concatenation());
    }
    return items.length === 1 ? items[0]! : { t: "alt", items };
  }

  private concatenation(): Node {
    const items: Node[] = [];
    for (;;) {
      const ch = this.peek();
      if (ch === undefined || ch === "|" || ch === ")") break;
      items.push(this.quantified());
    }
    if (items.length === 0) return { t: "empty" };
    return items.length === 1 ? items[0]! : { t: "cat", items };
  }

  private quantified(): Node {
    let node = this.atom();
    for (;;) {
      const ch = this.peek();
      let min: number;
      let max: number;
      const at = this.i;
      if (ch === "*") {
        min = 0;
        max = Number.POSITIVE_INFINITY;
        this.i++;
      } else if (ch === "+") {
        min = 1;
        max = Number.POSITIVE_INFINITY;
        this.i++;
      } else if (ch === "?") {
        min = 0;
        max = 1;
        this.i++;
      } else if (ch === "{" && this.isCountedRepeat()) {
        [min, max] = this.countedRepeat();
      } else {
        return node;
      }
      if (node.t === "bol" || node.t === "eol" || node.t === "empty") {
        throw new RegexSyntaxError("nothing to repeat in regex", at);
      }
      if (node.t === "repeat") {
        throw new RegexSyntaxError("repeated quantifier in regex: put the inner part in a group", at);
      }
      if (this.peek() === "?") this.i++; // lazy: the same language, and a yes/no match does not care
      if (this.peek() === "+") throw new RegexSyntaxError("possessive quantifiers are not supported in regex", this.i);
      node = { t: "repeat", node, min, max };
    }
  }

  private isCountedRepeat(): boolean {
    return /^\{\d+(,\d*)?\}/.test(this.src.slice(this.i, this.i + 12));
  }

  private countedRepeat(): [number, number] {
    const at = this.i;
    const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i, this.i + 12))!;
    this.i += m[0].length;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === "" ? Number.POSITIVE_INFINITY : Number(m[3]);
    if (min > maxRepeat || (Number.isFinite(max) && max > maxRepeat)) {
      throw new RegexSyntaxError(`repeat count above ${maxRepeat} in regex`, at);
    }
    if (max < min) throw new RegexSyntaxError("repeat range out of order in regex", at);
    return [min, max];
  }

  private atom(): Node {
    const at = this.i;
    const ch = this.src[this.i++]!;
    switch (ch) {
      case ".":
        return { t: "any" };
      case "^":
        return { t: "bol" };
      case "$":
        return { t: "eol" };
      case "[":
        return this.charClass(at);
      case "(":
        return this.group(at);
      case "*":
      case "+":
      case "?":
        throw new RegexSyntaxError("nothing to repeat in regex", at);
      case "\\": {
        const ranges = this.escape(at, false);
        return ranges.length === 1 && ranges[0]![0] === ranges[0]![1]
          ? { t: "char", c: ranges[0]![0] }
          : { t: "class", ranges, negated: false };
      }
      default:
        return { t: "char", c: ch.charCodeAt(0) };
    }
  }

  private group(at: number): Node {
    if (this.peek() === "?") {
      if (this.src[this.i + 1] === ":") {
        this.i += 2;
      } else {
        const next = this.src[this.i + 1];
        const what =
          next === "=" || next === "!" || (next === "<" && (this.src[this.i + 2] === "=" || this.src[this.i + 2] === "!"))
            ? "lookaround is"
            : next === "P" || next === "<"
              ? "named groups are"
              : "regex flags are";
        throw new RegexSyntaxError(`${what} not supported in regex`, at);
      }
    }
    if (++this.groupDepth > 32) throw new RegexSyntaxError("regex groups nested too deeply", at);
    const inner = this.alternation();
    this.groupDepth--;
    if (this.peek() !== ")") throw new RegexSyntaxError(`missing ")" for the "(" in regex`, at);
    this.i++;
    // Wrapped so that a quantifier after the group applies to the group, e.g. (a+)+.
    return { t: "cat", items: [inner] };
  }

  /** After a backslash: the ranges it stands for. */
  private escape(at: number, inClass: boolean): Range[] {
    const ch = this.src[this.i++];
    if (ch === undefined) throw new RegexSyntaxError("regex ends with a lone backslash", at);
    switch (ch) {
      case "d":
        return digit;
      case "D":
        return negate(digit);
      case "w":
        return word;
      case "W":
        return negate(word);
      case "s":
        return space;
      case "S":
        return negate(space);
      case "n":
        return [[10, 10]];
      case "r":
        return [[13, 13]];
      case "t":
        return [[9, 9]];
      case "f":
        return [[12, 12]];
      case "v":
        return [[11, 11]];
      case "x": {
        const hex = /^[0-9a-fA-F]{2}/.exec(this.src.slice(this.i, this.i + 2));
        if (!hex) throw new RegexSyntaxError("\\x needs two hex digits in regex", at);
        this.i += 2;
        const c = Number.parseInt(hex[0], 16);
        return [[c, c]];
      }
    }
    if (ch >= "1" && ch <= "9") throw new RegexSyntaxError("backreferences are not supported in regex", at);
    if (ch === "b" || ch === "B") {
      if (inClass) throw new RegexSyntaxError(`"\\${ch}" is not supported in a regex class`, at);
      throw new RegexSyntaxError("word boundaries (\\b, \\B) are not supported in regex", at);
    }
    if (metachars.includes(ch) || /[^0-9A-Za-z]/.test(ch)) {
      const c = ch.charCodeAt(0);
      return [[c, c]];
    }
    throw new RegexSyntaxError(`unknown escape "\\${ch}" in regex`, at);
  }

  private charClass(at: number): Node {
    let negated = false;
    if (this.peek() === "^") {
      negated = true;
      this.i++;
    }
    const ranges: Range[] = [];
    let first = true;
    for (;;) {
      const pos = this.i;
      const ch = this.src[this.i];
      if (ch === undefined) throw new RegexSyntaxError(`missing "]" for the "[" in regex`, at);
      if (ch === "]" && !first) {
        this.i++;
        break;
      }
      first = false;
      const lo = this.classAtom(pos);
      if (this.peek() === "-" && this.src[this.i + 1] !== "]" && this.src[this.i + 1] !== undefined) {
        this.i++;
        const hiPos = this.i;
        const hi = this.classAtom(hiPos);
        if (lo.length !== 1 || hi.length !== 1 || lo[0]![0] !== lo[0]![1] || hi[0]![0] !== hi[0]![1]) {
          throw new RegexSyntaxError("bad range in regex class", pos);
        }
        if (hi[0]![0] < lo[0]![0]) throw new RegexSyntaxError("range out of order in regex class", pos);
        ranges.push([lo[0]![0], hi[0]![0]]);
      } else {
        ranges.push(...lo);
      }
    }
    return { t: "class", ranges, negated };
  }

  private classAtom(pos: number): Range[] {
    const ch = this.src[this.i++]!;
    if (ch === "\\") return this.escape(pos, true);
    if (ch === "[" && this.peek() === ":") throw new RegexSyntaxError("POSIX classes are not supported in regex", pos);
    const c = ch.charCodeAt(0);
    if (c >= 0xd800 && c <= 0xdfff) {
      throw new RegexSyntaxError("characters outside the Basic Multilingual Plane are not supported in a regex class", pos);
    }
    return [[c, c]];
  }
}

// ---- Thompson NFA ----

enum Op {
  Char,
  Class,
  Any,
  Split,
  Bol,
  Eol,
  Match,
}

type State = { op: Op; c: number; ranges: Range[] | null; negated: boolean; out: number; out1: number };

type Frag = { start: number; outs: Array<[number, 0 | 1]> };

class NfaBuilder {
  readonly states: State[] = [];

  add(op: Op, c = 0, ranges: Range[] | null = null, negated = false): number {
    if (this.states.length >= maxStates) throw new RegexSyntaxError("regex too complex", 0);
    this.states.push({ op, c, ranges, negated, out: -1, out1: -1 });
    return this.states.length - 1;
  }

  patch(outs: Frag["outs"], to: number): void {
    for (const [s, which] of outs) {
      if (which === 0) this.states[s]!.out = to;
      else this.states[s]!.out1 = to;
    }
  }

  build(node: Node): Frag {
    switch (node.t) {
      case "char": {
        const s = this.add(Op.Char, node.c);
        return { start: s, outs: [[s, 0]] };
      }
      case "class": {
        const s = this.add(Op.Class, 0, node.ranges, node.negated);
        return { start: s, outs: [[s, 0]] };
      }
      case "any": {
        const s = this.add(Op.Any);
        return { start: s, outs: [[s, 0]] };
      }
      case "bol":
      case "eol": {
        const s = this.add(node.t === "bol" ? Op.Bol : Op.Eol);
        return { start: s, outs: [[s, 0]] };
      }
      case "empty": {
        const s = this.add(Op.Split);
        // A split whose both arms lead to the same place: an epsilon move.
        return {
          start: s,
          outs: [
            [s, 0],
            [s, 1],
          ],
        };
      }
      case "cat": {
        let frag = this.build(node.items[0]!);
        for (const item of node.items.slice(1)) {
          const next = this.build(item);
          this.patch(frag.outs, next.start);
          frag = { start: frag.start, outs: next.outs };
        }
        return frag;
      }
      case "alt": {
        let frag = this.build(node.items[0]!);
        for (const item of node.items.slice(1)) {
          const next = this.build(item);
          const s = this.add(Op.Split);
          this.states[s]!.out = frag.start;
          this.states[s]!.out1 = next.start;
          frag = { start: s, outs: [...frag.outs, ...next.outs] };
        }
        return frag;
      }
      case "repeat":
        return this.repeat(node.node, node.min, node.max);
    }
  }

  private star(node: Node): Frag {
    const s = this.add(Op.Split);
    const body = this.build(node);
    this.states[s]!.out = body.start;
    this.patch(body.outs, s);
    return { start: s, outs: [[s, 1]] };
  }

  private optional(node: Node): Frag {
    const s = this.add(Op.Split);
    const body = this.build(node);
    this.states[s]!.out = body.start;
    return { start: s, outs: [...body.outs, [s, 1]] };
  }

  private repeat(node: Node, min: number, max: number): Frag {
    const parts: Frag[] = [];
    for (let k = 0; k < min; k++) parts.push(this.build(node));
    if (!Number.isFinite(max)) {
      parts.push(this.star(node));
    } else {
      for (let k = min; k < max; k++) parts.push(this.optional(node));
    }
    if (parts.length === 0) return this.build({ t: "empty" });
    let frag = parts[0]!;
    for (const next of parts.slice(1)) {
      this.patch(frag.outs, next.start);
      frag = { start: frag.start, outs: next.outs };
    }
    return frag;
  }
}

function sameSet(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}

function inRanges(ranges: Range[], c: number): boolean {
  for (const [lo, hi] of ranges) if (c >= lo && c <= hi) return true;
  return false;
}

type DfaState = { nfa: Int32Array; isMatch: boolean; hasEol: boolean; next: Map<number, DfaState> };

/**
 * A hard allowance of matcher steps, shared by everything one evaluation runs: a character through a cached DFA
 * state costs 1, building a DFA state costs the NFA states it looks at. Linear time is not cheap time: a pattern
 * whose DFA will not fit the cache (`[ab]*a[ab]{99}z`) costs hundreds of steps per character. Once `left` is below
 * zero the matcher stops and answers false; the caller must treat that answer as unknown. A step is ~8-60 ns.
 */
export type StepMeter = { left: number };

/** A compiled pattern. `test` is safe on hostile input: linear in the input length. */
export class SafeRegex {
  private dfaCount = 0;
  /** DFA states by a hash of their NFA set (FNV-1a over the sorted state numbers); collisions share a bucket. */
  private cache = new Map<number, DfaState[]>();
  private readonly mark: Uint32Array;
  private generation = 1;
  private startAtBegin!: DfaState;
  private startMid!: number[];

  constructor(
    readonly source: string,
    private readonly states: State[],
    private readonly start: number,
  ) {
    this.mark = new Uint32Array(states.length);
    this.reset();
  }

  /** NFA states: what compiling the pattern cost, and what building one DFA state may cost. */
  get size(): number {
    return this.states.length;
  }

  private reset(): void {
    this.cache = new Map();
    this.dfaCount = 0;
    this.startMid = this.closure([this.start], false);
    this.startAtBegin = this.intern(this.closure([this.start], true));
  }

  /** Epsilon closure; `^` passes only at the input's start; `$` states are kept and resolved at the end. */
  private closure(seeds: number[], atBegin: boolean): number[] {
    const gen = ++this.generation;
    const out: number[] = [];
    const stack = [...seeds];
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (s < 0 || this.mark[s] === gen) continue;
      this.mark[s] = gen;
      const st = this.states[s]!;
      if (st.op === Op.Split) {
        stack.push(st.out1, st.out);
      } else if (st.op === Op.Bol) {
        if (atBegin) stack.push(st.out);
      } else {
        out.push(s);
      }
    }
    return out;
  }

  private intern(set: number[]): DfaState {
    const sorted = Int32Array.from(set).sort();
    let hash = 0x811c9dc5;
    for (let k = 0; k < sorted.length; k++) hash = Math.imul(hash ^ sorted[k]!, 16777619);
    const bucket = this.cache.get(hash);
    if (bucket) {
      for (const found of bucket) if (sameSet(found.nfa, sorted)) return found;
    }
    const state: DfaState = {
      nfa: sorted,
      isMatch: set.some((s) => this.states[s]!.op === Op.Match),
      hasEol: set.some((s) => this.states[s]!.op === Op.Eol),
      next: new Map(),
    };
    if (bucket) bucket.push(state);
    else this.cache.set(hash, [state]);
    this.dfaCount++;
    return state;
  }

  private step(from: DfaState, c: number): DfaState {
    const seeds: number[] = [];
    for (const s of from.nfa) {
      const st = this.states[s]!;
      const ok =
        st.op === Op.Char ? st.c === c : st.op === Op.Any ? c !== 10 : st.op === Op.Class ? inRanges(st.ranges!, c) !== st.negated : false;
      if (ok) seeds.push(st.out);
    }
    // Unanchored search: a match may also start at the next position.
    const set = this.closure([...seeds, ...this.startMid], false);
    return this.intern(set);
  }

  private acceptsAtEnd(state: DfaState, meter?: StepMeter): boolean {
    if (state.isMatch) return true;
    if (!state.hasEol) return false;
    // Uncached, but at most once per test and bounded by the pattern's states.
    if (meter) meter.left -= this.states.length;
    const seeds = [];
    for (const s of state.nfa) if (this.states[s]!.op === Op.Eol) seeds.push(this.states[s]!.out);
    // After `$` only more zero-width items may follow (another `$`, or `^` on empty input).
    let set = this.closure(seeds, false);
    for (let k = 0; k < this.states.length && set.length > 0; k++) {
      if (set.some((s) => this.states[s]!.op === Op.Match)) return true;
      const more = set.filter((s) => this.states[s]!.op === Op.Eol).map((s) => this.states[s]!.out);
      if (more.length === 0) return false;
      set = this.closure(more, false);
    }
    return false;
  }

  /**
   * Unanchored match. Looks at no more than `maxLength` characters: past that, a match must lie wholly in the
   * prefix, and `$` does not match at the cut. With a meter, stops (false) when its steps run out: cached steps are
   * charged when the test ends, built ones as they are built, so a test overdraws by at most `maxLength`.
   */
  test(input: string, maxLength = Number.POSITIVE_INFINITY, meter?: StepMeter): boolean {
    if (meter && meter.left < 0) return false;
    let state = this.startAtBegin;
    if (state.isMatch) return true;
    const end = Math.min(input.length, maxLength);
    let i = 0;
    for (; i < end; i++) {
      const c = input.charCodeAt(i);
      let next = state.next.get(c);
      if (next === undefined) {
        if (this.dfaCount >= maxDfaStates) {
          // The cache is full: start over from the current set (RE2 does the same), keeping the cost bounded.
          const nfa = Array.from(state.nfa);
          this.reset();
          state = this.intern(nfa);
          if (meter) meter.left -= this.startMid.length + nfa.length;
        }
        next = this.step(state, c);
        state.next.set(c, next);
        if (meter) {
          meter.left -= buildSteps + state.nfa.length + next.nfa.length + this.startMid.length;
          if (meter.left < 0) return false;
        }
      }
      state = next;
      if (state.isMatch) break;
    }
    if (meter) meter.left -= i;
    if (state.isMatch) return true;
    return end === input.length && this.acceptsAtEnd(state, meter);
  }

  /**
   * The states of this pattern's search DFA (the one an unanchored match runs), counted up to `cap`: built over one
   * character of each class of characters the pattern tells apart, each transition charged to `budget.steps` as the
   * NFA states it looks at. More than `cap` states, or the steps spent, gives Infinity.
   */
  searchDfaSize(cap: number, budget: { steps: number }): number {
    const bounds = new Set<number>([0, 10, 11]);
    for (const st of this.states) {
      if (st.op === Op.Char) bounds.add(st.c).add(st.c + 1);
      else if (st.op === Op.Class) for (const [lo, hi] of st.ranges!) bounds.add(lo).add(hi + 1);
    }
    const alphabet = [...bounds].filter((c) => c < 0x10000).sort((a, b) => a - b);
    this.reset();
    try {
      const seen = new Set<DfaState>([this.startAtBegin]);
      const queue = [this.startAtBegin];
      while (queue.length > 0) {
        const from = queue.pop()!;
        for (const c of alphabet) {
          budget.steps -= from.nfa.length + this.startMid.length;
          if (budget.steps < 0) return Number.POSITIVE_INFINITY;
          const next = this.step(from, c);
          if (seen.has(next)) continue;
          if (seen.size >= cap) return Number.POSITIVE_INFINITY;
          seen.add(next);
          queue.push(next);
        }
      }
      return seen.size;
    } finally {
      this.reset();
    }
  }
}

/** Search DFAs up to this many states are what RE2 builds once and then runs at a lookup per character. */
export const smallDfaStates = 256;

/**
 * What one `matches` of this pattern costs a store engine (RE2) per character of a row it reads, in units of a cached
 * DFA step: 1 when the pattern's search DFA is small, else its NFA states (RE2 then builds a state, or simulates the
 * NFA, at nearly every character: `[ab]*a[ab]{99}z` costs it about 2 us per character). `budget.steps` bounds the
 * work of finding out, across a query's patterns; a pattern it does not cover is costed as large.
 */
export function storeRegexCost(regex: SafeRegex, budget: { steps: number }): number {
  return Number.isFinite(regex.searchDfaSize(smallDfaStates, budget)) ? 1 : regex.size;
}

/** Parses and compiles a pattern, or throws RegexSyntaxError with a position inside the pattern. */
export function compileRegex(pattern: string): SafeRegex {
  if (pattern.length > maxPatternLength) {
    throw new RegexSyntaxError(`regex longer than ${maxPatternLength} characters`, maxPatternLength);
  }
  const ast = new RegexParser(pattern).parse();
  const builder = new NfaBuilder();
  const frag = builder.build(ast);
  const match = builder.add(Op.Match);
  builder.patch(frag.outs, match);
  return new SafeRegex(pattern, builder.states, frag.start);
}
