import { mapLimit, retry } from "./async.ts";

export interface Image {
  url: string;
  bytes: Uint8Array;
}

export interface ThumbnailJob {
  urls: string[];
  /** How many downloads may run at once. */
  concurrency: number;
  fetchImage: (url: string) => Promise<Image>;
  resize: (image: Image, width: number) => Uint8Array;
}

export async function makeThumbnails(job: ThumbnailJob, width = 200): Promise<Uint8Array[]> {
  const images = await mapLimit(job.urls, job.concurrency, (url) => retry(() => job.fetchImage(url), 3));
  return images.map((image) => job.resize(image, width));
}
