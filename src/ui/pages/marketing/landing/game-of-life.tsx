import { useEffect, useRef } from "react";
import { addCells, CELL_PX, createLife, type Life, liveShare, presimulate, stepLife, TICK_MS, TRAIL_LENGTH } from "./life.ts";
import { useAnimates } from "./use-visible.ts";

/**
 * The hero's Game of Life, drawn on a canvas that fills its (already sized) box: one generation a second while on
 * screen, a click or drag adds cells, a random restart when it dies out or settles. Under reduced motion it draws one
 * still frame. The live-cell count is on `data-live` for tests and tools.
 */
export function GameOfLife() {
  const canvas = useRef<HTMLCanvasElement>(null);
  const life = useRef<Life | null>(null);
  const animates = useAnimates(canvas);

  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    const draw = () => {
      const state = life.current;
      const ctx = el.getContext("2d");
      if (!state || !ctx) return;
      ctx.clearRect(0, 0, el.width, el.height);
      const dpr = el.width / Math.max(1, el.clientWidth);
      const size = CELL_PX * dpr;
      state.trail.forEach((i, n) => {
        ctx.fillStyle = `rgba(16, 185, 129, ${(0.25 * (n + 1)) / TRAIL_LENGTH})`;
        ctx.fillRect((i % state.cols) * size + dpr, Math.floor(i / state.cols) * size + dpr, size - 2 * dpr, size - 2 * dpr);
      });
      ctx.fillStyle = "rgba(63, 63, 70, 0.55)";
      let live = 0;
      for (let i = 0; i < state.cells.length; i++) {
        if (!state.cells[i]) continue;
        live++;
        ctx.fillRect((i % state.cols) * size + dpr, Math.floor(i / state.cols) * size + dpr, size - 2 * dpr, size - 2 * dpr);
      }
      el.dataset.live = String(live);
    };
    const reset = () => {
      const cols = Math.max(1, Math.ceil(el.clientWidth / CELL_PX));
      const rows = Math.max(1, Math.ceil(el.clientHeight / CELL_PX));
      const dpr = Math.min(2, window.devicePixelRatio || 1);
      el.width = Math.round(el.clientWidth * dpr);
      el.height = Math.round(el.clientHeight * dpr);
      const next = createLife(cols, rows);
      presimulate(next);
      life.current = next;
      draw();
    };
    reset();
    const resize = new ResizeObserver(() => {
      const state = life.current;
      if (!state || Math.ceil(el.clientWidth / CELL_PX) !== state.cols || Math.ceil(el.clientHeight / CELL_PX) !== state.rows) reset();
    });
    resize.observe(el);
    let isDown = false;
    const add = (event: PointerEvent) => {
      const state = life.current;
      if (!state) return;
      const box = el.getBoundingClientRect();
      addCells(state, Math.floor((event.clientX - box.left) / CELL_PX), Math.floor((event.clientY - box.top) / CELL_PX));
      draw();
    };
    const down = (event: PointerEvent) => {
      isDown = true;
      add(event);
    };
    const move = (event: PointerEvent) => {
      if (isDown) add(event);
    };
    const up = () => {
      isDown = false;
    };
    el.addEventListener("pointerdown", down);
    el.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    (el as HTMLCanvasElement & { redraw?: () => void }).redraw = draw;
    return () => {
      resize.disconnect();
      el.removeEventListener("pointerdown", down);
      el.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
    };
  }, []);

  useEffect(() => {
    if (!animates) return;
    const el = canvas.current;
    const timer = setInterval(() => {
      const state = life.current;
      if (!state || !el) return;
      const changed = stepLife(state);
      if (!changed || liveShare(state) < 0.02) {
        const next = createLife(state.cols, state.rows);
        presimulate(next);
        life.current = next;
      }
      (el as HTMLCanvasElement & { redraw?: () => void }).redraw?.();
    }, TICK_MS);
    return () => clearInterval(timer);
  }, [animates]);

  return (
    <canvas
      ref={canvas}
      aria-label="Game of Life: click or drag to add cells"
      className="absolute inset-0 h-full w-full cursor-crosshair touch-none"
    />
  );
}
