/**
 * Conway's Game of Life on a torus, for the landing page's hero: 24 px cells, a pre-simulation of up to 120 steps
 * that stops once fewer than 25 % of the cells live (so the first frame is already organic, not noise), one step a
 * second, and a trail: each cell remembers the step it last died on, so the last 8 cells that died fade out.
 */
export const CELL_PX = 24;
export const PRESIMULATE_MAX_STEPS = 120;
export const PRESIMULATE_LIVE_BELOW = 0.25;
export const TICK_MS = 1000;
export const TRAIL_LENGTH = 8;

export type Life = {
  cols: number;
  rows: number;
  cells: Uint8Array;
  step: number;
  /** The most recent cells that died, newest last, at most TRAIL_LENGTH. */
  trail: number[];
};

export function createLife(cols: number, rows: number, random: () => number = Math.random, density = 0.5): Life {
  const cells = new Uint8Array(cols * rows);
  for (let i = 0; i < cells.length; i++) cells[i] = random() < density ? 1 : 0;
  return { cols, rows, cells, step: 0, trail: [] };
}

export function liveShare(life: Life): number {
  let live = 0;
  for (const c of life.cells) live += c;
  return life.cells.length === 0 ? 0 : live / life.cells.length;
}

/** One generation (B3/S23, edges wrap). Returns whether anything changed. */
export function stepLife(life: Life): boolean {
  const { cols, rows, cells } = life;
  const next = new Uint8Array(cells.length);
  let changed = false;
  for (let y = 0; y < rows; y++) {
    for (let x = 0; x < cols; x++) {
      let n = 0;
      for (let dy = -1; dy <= 1; dy++)
        for (let dx = -1; dx <= 1; dx++) {
          if (dx === 0 && dy === 0) continue;
          n += cells[((y + dy + rows) % rows) * cols + ((x + dx + cols) % cols)]!;
        }
      const i = y * cols + x;
      const alive = cells[i] === 1 ? n === 2 || n === 3 : n === 3;
      next[i] = alive ? 1 : 0;
      if (next[i] !== cells[i]) {
        changed = true;
        if (!alive) {
          life.trail.push(i);
          if (life.trail.length > TRAIL_LENGTH) life.trail.shift();
        }
      }
    }
  }
  life.cells = next;
  life.step++;
  return changed;
}

/** Steps until fewer than 25 % of the cells live, at most 120 steps; returns the steps taken. */
export function presimulate(life: Life): number {
  let steps = 0;
  while (steps < PRESIMULATE_MAX_STEPS && liveShare(life) >= PRESIMULATE_LIVE_BELOW) {
    stepLife(life);
    steps++;
  }
  return steps;
}

/** A visitor's click or drag: the cell under the pointer and its neighbours in a small glider-friendly cross. */
export function addCells(life: Life, x: number, y: number): void {
  for (const [dx, dy] of [
    [0, 0],
    [1, 0],
    [-1, 0],
    [0, 1],
    [0, -1],
  ] as const) {
    const cx = (x + dx + life.cols) % life.cols;
    const cy = (y + dy + life.rows) % life.rows;
    life.cells[cy * life.cols + cx] = 1;
  }
}
