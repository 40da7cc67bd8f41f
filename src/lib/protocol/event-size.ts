import { eventFields, type TracedEvent } from "./event.ts";
import type { EventFields } from "./event-fields.ts";

/**
 * About the length of an event's JSON without making it (the live history's byte bound before anyone asked for the
 * text): every text and body, header and tag, plus the keys, 5 characters per flag and about 16 per number (2 for one digit). Made once per
 * table as one function that reads each field by name, as a hand-written one would; the names are the table's own
 * (checked to be snake_case). Server-only, like the validators: the pages never load it.
 */
export function jsonLengthEstimator(fields: EventFields): (event: TracedEvent) => number {
  let fixed = 2;
  const terms: string[] = [];
  const loops: string[] = [];
  for (const f of fields.rows) {
    fixed += f.name.length + 4;
    const value = `e.${f.name}`;
    // A flag is "true" or "false"; most whole numbers of a kind's other fields are -1 or 0 (the table's neutral values).
    if (f.type === "flag") fixed += 5;
    else if (f.type === "int") terms.push(`(${value} > -10 && ${value} < 10 ? 2 : 16)`);
    else if (f.type === "time") fixed += 16;
    else if (f.type === "headers") loops.push(`for (const p of ${value}) n += p[0].length + p[1].length + 6;`);
    else if (f.type === "tags") loops.push(`for (const k in ${value}) n += k.length + (${value}[k]?.length ?? 0) + 6;`);
    else terms.push(`${value}.length`);
  }
  const body = `let n = ${[fixed, ...terms].join(" + ")};\n${loops.join("\n")}\nreturn n;`;
  return new Function("e", body) as (event: TracedEvent) => number;
}

export const estimateJsonLength: (event: TracedEvent) => number = jsonLengthEstimator(eventFields);
