import { readNote, type Note } from "./notes.ts";

/** Tag -> titles of the notes carrying it, both sorted. */
export function buildIndex(files: { path: string; text: string }[]): Map<string, string[]> {
  const notes: Note[] = files.map((f) => readNote(f.path, f.text));
  const index = new Map<string, string[]>();
  for (const note of notes) {
    for (const tag of new Set(note.tags)) {
      index.set(tag, [...(index.get(tag) ?? []), note.title]);
    }
  }
  for (const titles of index.values()) {
    titles.sort();
  }
  return new Map([...index.entries()].sort(([a], [b]) => a.localeCompare(b)));
}

export function renderIndex(index: Map<string, string[]>): string {
  return [...index].map(([tag, titles]) => `${tag}: ${titles.join("; ")}`).join("\n");
}
