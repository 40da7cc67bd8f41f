import { expect, test } from "bun:test";
import { addCells, createLife, liveShare, presimulate, stepLife, TRAIL_LENGTH } from "~/ui/pages/marketing/landing/life.ts";

const empty = (cols: number, rows: number) => createLife(cols, rows, () => 1);

test("a blinker oscillates with period 2; a block stays", () => {
  const life = empty(5, 5);
  for (const x of [1, 2, 3]) life.cells[2 * 5 + x] = 1;
  const horizontal = [...life.cells];
  expect(stepLife(life)).toBe(true);
  expect([1, 2, 3].map((y) => life.cells[y * 5 + 2])).toEqual([1, 1, 1]);
  stepLife(life);
  expect([...life.cells]).toEqual(horizontal);
  const block = empty(4, 4);
  for (const i of [5, 6, 9, 10]) block.cells[i] = 1;
  expect(stepLife(block)).toBe(false);
});

test("pre-simulation stops once fewer than 25 % live, and never runs past 120 steps", () => {
  let seed = 7;
  const random = () => {
    seed = (seed * 16807) % 2147483647;
    return seed / 2147483647;
  };
  const life = createLife(40, 30, random, 0.5);
  expect(liveShare(life)).toBeGreaterThan(0.25);
  const steps = presimulate(life);
  expect(steps).toBeGreaterThan(0);
  expect(steps).toBeLessThanOrEqual(120);
  if (steps < 120) expect(liveShare(life)).toBeLessThan(0.25);
  const full = createLife(6, 6, () => 0, 1); // every cell alive: dies at once, below 25 % after one step
  expect(presimulate(full)).toBe(1);
});

test("the trail keeps the last 8 cells that died; a click adds live cells around the pointer", () => {
  const life = createLife(20, 20, () => 0, 0.6);
  for (let i = 0; i < 10; i++) stepLife(life);
  expect(life.trail.length).toBe(TRAIL_LENGTH);
  const quiet = empty(10, 10);
  addCells(quiet, 0, 0);
  expect(liveShare(quiet)).toBe(5 / 100);
  expect(quiet.cells[0]).toBe(1);
  expect(quiet.cells[9]).toBe(1); // wraps to the other edge
});
