/**
 * The JavaScript heap a worker needs to carry a national storm. Node sizes its heap from the
 * container's memory limit: 1 GiB gives 524 MiB on Node 20 and about 560 MiB on Node 24, where
 * a storm runs as with no limit; 512 MiB gives 259 MiB, where the bench's storm took a third
 * longer, collecting garbage at the heap's edge (docs/operations.md, "Memory").
 */
export const HEAP_ADVISED_MIB = 480;

/** What the worker says at start when its heap is smaller than that, or null. */
export function smallHeapWarning(o: {
  /** `v8.getHeapStatistics().heap_size_limit`. */
  heapLimitBytes: number;
  /** `process.constrainedMemory()`: the container's limit; 0 or a huge value without one. */
  memoryLimitBytes: number;
  /** `os.totalmem()`: a limit at or above it limits nothing. */
  totalMemoryBytes: number;
}): { heapLimitMib: number; memoryLimitMib?: number; advisedHeapMib: number } | null {
  const heapLimitMib = Math.round(o.heapLimitBytes / 2 ** 20);
  if (heapLimitMib >= HEAP_ADVISED_MIB) return null;
  const limited = o.memoryLimitBytes > 0 && o.memoryLimitBytes < o.totalMemoryBytes;
  return {
    heapLimitMib,
    ...(limited ? { memoryLimitMib: Math.round(o.memoryLimitBytes / 2 ** 20) } : {}),
    advisedHeapMib: HEAP_ADVISED_MIB,
  };
}
