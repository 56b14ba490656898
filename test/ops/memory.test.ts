import { describe, expect, it } from 'vitest';
import { HEAP_ADVISED_MIB, smallHeapWarning } from '../../src/ops/memory.js';

const MIB = 2 ** 20;
const MACHINE = 24 * 1024 * MIB;

describe('the worker’s heap at start', () => {
  it('says nothing of the heap a 1 GiB container gives Node 20 or 24', () => {
    for (const heap of [524, 560, 4144]) {
      expect(
        smallHeapWarning({
          heapLimitBytes: heap * MIB,
          memoryLimitBytes: 1024 * MIB,
          totalMemoryBytes: MACHINE,
        }),
      ).toBe(null);
    }
  });

  it('warns of the heap a 512 MiB container gives, naming the limit', () => {
    expect(
      smallHeapWarning({
        heapLimitBytes: 259 * MIB,
        memoryLimitBytes: 512 * MIB,
        totalMemoryBytes: MACHINE,
      }),
    ).toEqual({
      heapLimitMib: 259,
      memoryLimitMib: 512,
      advisedHeapMib: HEAP_ADVISED_MIB,
    });
  });

  it('warns of a heap capped by hand, with no container limit to name', () => {
    for (const unlimited of [0, MACHINE, 2 ** 63 - 1, Number.MAX_SAFE_INTEGER]) {
      const warning = smallHeapWarning({
        heapLimitBytes: 256 * MIB,
        memoryLimitBytes: unlimited,
        totalMemoryBytes: MACHINE,
      });
      expect(warning).toEqual({ heapLimitMib: 256, advisedHeapMib: HEAP_ADVISED_MIB });
    }
  });
});
