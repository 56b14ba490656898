import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * `npm ci` refuses a lock out of step with package.json, and an `npm install` run on one
 * platform can drop the optional platform packages another platform needs (msgpackr-extract's
 * linux-x64 build went missing that way). `.ci/run` installs with `npm ci` only; this checks the
 * same agreement in a second, without a network, so the lock cannot rot unnoticed.
 */

interface LockedPackage {
  version?: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

interface Lock {
  name?: string;
  lockfileVersion?: number;
  packages: Record<string, LockedPackage>;
}

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/**
 * Where Node would find `name` when required from the package at `from`: its own node_modules,
 * then each enclosing one, up to the root's.
 */
function resolveFrom(lock: Lock, from: string, name: string): string | null {
  let dir = from;
  for (;;) {
    const candidate = `${dir === '' ? '' : `${dir}/`}node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (dir === '') return null;
    const cut = dir.lastIndexOf('/node_modules/');
    dir = cut < 0 ? '' : dir.slice(0, cut);
  }
}

/** Every way the lock disagrees with the manifest or with itself; empty when `npm ci` can use it. */
export function lockProblems(manifest: Manifest, lock: Lock): string[] {
  const problems: string[] = [];
  if (lock.lockfileVersion !== 3)
    problems.push(`lockfileVersion is ${lock.lockfileVersion}, not 3`);
  const root = lock.packages[''];
  if (!root) return [...problems, 'the lock has no root package entry ("")'];
  for (const field of ['dependencies', 'devDependencies', 'optionalDependencies'] as const) {
    const declared = manifest[field] ?? {};
    const locked = root[field] ?? {};
    for (const [name, range] of Object.entries(declared)) {
      if (locked[name] !== range) {
        problems.push(
          `package.json ${field}.${name} is "${range}", the lock records ${locked[name] === undefined ? 'nothing' : `"${locked[name]}"`}`,
        );
      }
      if (!lock.packages[`node_modules/${name}`]) {
        problems.push(`${field}.${name} has no node_modules/${name} entry in the lock`);
      }
    }
    for (const name of Object.keys(locked)) {
      if (!(name in declared))
        problems.push(`the lock records ${field}.${name}, package.json does not`);
    }
  }
  for (const [path, entry] of Object.entries(lock.packages)) {
    const needs = { ...entry.dependencies, ...entry.optionalDependencies };
    for (const name of Object.keys(needs)) {
      if (resolveFrom(lock, path, name) === null) {
        const kind = entry.optionalDependencies?.[name] !== undefined ? 'optional ' : '';
        problems.push(
          `${path || '(root)'} declares ${kind}dependency ${name}, which the lock lacks`,
        );
      }
    }
  }
  return problems;
}

describe('package-lock.json', () => {
  const manifest = JSON.parse(read('package.json')) as Manifest;
  const lock = JSON.parse(read('package-lock.json')) as Lock;

  it('is in step with package.json and complete for every platform', () => {
    expect(lockProblems(manifest, lock)).toEqual([]);
    // The platform builds BullMQ's msgpackr loads on Linux, where the image runs.
    expect(
      lock.packages['node_modules/@msgpackr-extract/msgpackr-extract-linux-x64'],
    ).toBeDefined();
  });

  it('names what is wrong with a lock out of step', () => {
    const broken = structuredClone(lock);
    delete broken.packages['node_modules/@msgpackr-extract/msgpackr-extract-linux-x64'];
    broken.packages['']!.dependencies = { ...broken.packages['']!.dependencies, zod: '^3.0.0' };
    const bumped = {
      ...manifest,
      dependencies: { ...manifest.dependencies, 'left-pad': '^1.3.0' },
    };
    expect(lockProblems(bumped, broken)).toEqual([
      `package.json dependencies.zod is "${manifest.dependencies!.zod}", the lock records "^3.0.0"`,
      `package.json dependencies.left-pad is "^1.3.0", the lock records nothing`,
      'dependencies.left-pad has no node_modules/left-pad entry in the lock',
      'node_modules/msgpackr-extract declares optional dependency @msgpackr-extract/msgpackr-extract-linux-x64, which the lock lacks',
    ]);
  });
});
